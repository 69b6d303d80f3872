package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// checkAddress resolves host (once, when it is a name), classifies every address and returns the
// one to dial. A non-public address is allowed only when the policy names it as a literal origin,
// or, for a name, under WithAllowPrivateNames (and then only loopback, private, unique-local and
// CGNAT). reason is "" when the address may be dialed.
func (p *Proxy) checkAddress(ctx context.Context, host string, port int) (addr netip.AddrPort, rule, reason string) {
	if port <= 0 || port > 65535 {
		return addr, "port out of range", policy.ReasonPort
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		c := Classify(a)
		ap := netip.AddrPortFrom(a, uint16(port))
		if c.Public() || c.dialableLiteral() && p.literals[ap] {
			return ap, "", ""
		}
		return addr, fmt.Sprintf("%s address %s not named by the policy", c, a), ReasonAddress
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.timeouts.Dial)
	defer cancel()
	addrs, err := p.cfg.resolver(rctx, host)
	if err != nil {
		return addr, "resolving " + host + ": " + policy.Text(err.Error(), policy.MaxTextLen), ReasonResolve
	}
	if len(addrs) == 0 {
		return addr, "resolving " + host + ": no addresses", ReasonResolve
	}
	for _, a := range addrs {
		c := Classify(a)
		if c.Public() || p.cfg.allowPrivateNames && c.privateName() {
			continue
		}
		return addr, fmt.Sprintf("%s resolves to %s address %s", host, c, a), ReasonAddress
	}
	return netip.AddrPortFrom(addrs[0].WithZone(""), uint16(port)), "", ""
}

// dial connects to a checked ip:port. It refuses anything else, so that no code path can make it
// resolve a name.
func (p *Proxy) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(address); err != nil {
		return nil, fmt.Errorf("proxy: refusing to dial %q: not a checked ip:port", address)
	}
	dctx, cancel := context.WithTimeout(ctx, p.cfg.timeouts.Dial)
	defer cancel()
	c, err := p.cfg.dialer(dctx, network, address)
	if err != nil {
		return nil, err
	}
	return &idleConn{Conn: c, idle: p.cfg.timeouts.Idle}, nil
}

// idleConn is an upstream connection that fails a read or write after the idle timeout without
// progress. A write also extends the read deadline: a pooled connection being reused is not idle.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}
