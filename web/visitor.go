package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxy parses a --trusted-proxy value: a CIDR prefix ("10.0.0.0/8") or one address.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not an address or CIDR prefix", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// clientAddr is the address of the client that made r. X-Forwarded-For is believed only when the
// connection comes from a trusted proxy, and then only as far as the chain of trusted proxies
// goes: the right-most address that is not a trusted proxy is the client.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r)
	if !peer.IsValid() || !isTrusted(peer, trusted) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// A malformed entry: nothing to its left can be believed.
			return client
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			return client
		}
	}
	return client
}

func remoteAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// visitorKey is the key a visitor's limits are counted under: the IPv4 address, or the IPv6 /64
// (one subscriber usually holds a whole /64).
func visitorKey(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is4():
		return a.String()
	default:
		p, _ := a.Prefix(64)
		return p.String()
	}
}
