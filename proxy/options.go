package proxy

import (
	"context"
	"crypto/x509"
	"net"
	"net/netip"
	"time"
)

// Defaults of the options.
const (
	DefaultBodyCap  = 5 << 20 // bytes of one response body
	DefaultMaxConns = 64      // requests and tunnels in flight at once

	DefaultDialTimeout           = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 90 * time.Second
	DefaultReadHeaderTimeout     = 10 * time.Second
)

// Resolver resolves a host name to its addresses. The proxy calls it once per request for a name
// (never for an IP literal) and dials one of the addresses it returned, after checking them all.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Dialer connects to address, an "ip:port" that the proxy has already checked; it is never given a
// name to resolve.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Timeouts bound each phase of a request. A zero field takes its default.
type Timeouts struct {
	// Dial bounds resolving the name and connecting to the upstream (DefaultDialTimeout).
	Dial time.Duration
	// ResponseHeader bounds the wait for the upstream's response header after the request was
	// written (DefaultResponseHeaderTimeout).
	ResponseHeader time.Duration
	// Idle bounds how long an upstream connection may go without a byte read or written: body
	// transfers, tunnels and pooled connections; it is also the client keep-alive timeout
	// (DefaultIdleTimeout).
	Idle time.Duration
	// ReadHeader bounds reading a client's request header (DefaultReadHeaderTimeout).
	ReadHeader time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Dial <= 0 {
		t.Dial = DefaultDialTimeout
	}
	if t.ResponseHeader <= 0 {
		t.ResponseHeader = DefaultResponseHeaderTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	if t.ReadHeader <= 0 {
		t.ReadHeader = DefaultReadHeaderTimeout
	}
	return t
}

type config struct {
	resolver          Resolver
	dialer            Dialer
	logf              func(format string, args ...any)
	hook              func(Decision)
	decided           func(Decision)
	bodyCap           int64
	runBytes          int64
	maxConns          int
	timeouts          Timeouts
	allowPrivateNames bool
	upstreamRoots     []*x509.Certificate
	hold              HoldFunc // hold.go
}

// Option configures a Proxy.
type Option func(*config)

// WithResolver replaces the system resolver (net.DefaultResolver.LookupNetIP).
func WithResolver(r Resolver) Option { return func(c *config) { c.resolver = r } }

// WithDialer replaces the dialer that connects to a checked address. Tests use it to see which
// address is dialed; whatever it does, it is only ever given the address the proxy checked.
func WithDialer(d Dialer) Option { return func(c *config) { c.dialer = d } }

// WithLogf sets the logger; by default the proxy logs nothing. It writes one CanonicalDecision line
// per request and a few operational lines.
func WithLogf(f func(format string, args ...any)) Option { return func(c *config) { c.logf = f } }

// WithDecisionHook sets a function called with the canonical record of every request, allowed or
// denied (407 challenges excluded), once the request is over. It is called from the request's
// goroutine, so it must be safe for concurrent use and should not block. Close returns only after
// every call has returned.
func WithDecisionHook(f func(Decision)) Option { return func(c *config) { c.hook = f } }

// WithDecidedHook sets a function called with the record of every request as soon as its verdict
// is taken, before anything is forwarded: an audit fed from it has the row of a request while
// the request is still running (a response that streams until the run ends included). The record
// then has no status, byte counts or error yet; WithDecisionHook gets the finished one. It is
// called from the request's goroutine, must be safe for concurrent use and should not block.
func WithDecidedHook(f func(Decision)) Option { return func(c *config) { c.decided = f } }

// WithBodyCap sets the largest response body, in bytes as sent on the wire (so compressed when the
// upstream compressed it), passed to the client (default DefaultBodyCap). A longer body is cut and
// the decision records Truncated.
func WithBodyCap(n int64) Option { return func(c *config) { c.bodyCap = n } }

// WithMaxConns sets how many requests and tunnels may be in flight at once (default
// DefaultMaxConns). Beyond it the proxy answers 503 with reason ReasonTooMany.
func WithMaxConns(n int) Option { return func(c *config) { c.maxConns = n } }

// WithTimeouts sets the timeouts; zero fields keep their defaults.
func WithTimeouts(t Timeouts) Option { return func(c *config) { c.timeouts = t } }

// WithAllowPrivateNames lets a host name named by the policy resolve to a loopback, RFC 1918,
// unique-local or CGNAT address (default false: such a name is denied with ReasonAddress). It
// never allows link-local (cloud metadata), unspecified, multicast, reserved or IPv4-embedding
// addresses. IP-literal origins named by the policy do not need it.
func WithAllowPrivateNames(allow bool) Option { return func(c *config) { c.allowPrivateNames = allow } }

// WithUpstreamRoots adds certificates to the system roots the proxy verifies https upstreams
// against: a private deployment's own authority, or a test's. Verification is never turned off; a
// certificate that does not verify fails the request with ReasonUpstreamCert.
func WithUpstreamRoots(certs ...*x509.Certificate) Option {
	return func(c *config) { c.upstreamRoots = append(c.upstreamRoots, certs...) }
}
