package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// Realm is the realm of the proxy's Basic challenge.
const Realm = "browser-agent"

// HostResolverRules is the --host-resolver-rules value that keeps Chromium from resolving any name
// itself: every name is NOTFOUND except the proxy's own address. With a fixed HTTP proxy Chromium
// sends the target name to the proxy rather than resolving it, so only the proxy resolves; this
// rule also stops the resolutions Chromium would do on its own (DNS prefetch, preconnect, secure
// DNS probes).
const HostResolverRules = "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"

// Error is a sentinel error of the proxy.
type Error string

func (e Error) Error() string { return string(e) }

// ErrClosed is returned when the proxy was used after Close.
const ErrClosed Error = "proxy closed"

// DeniedError is a request the proxy refused to forward, as a client made by Client sees it: a
// policy or address denial (403), a missing credential (407) or a full or closed proxy (503).
type DeniedError struct {
	Method string
	URL    string // origin and path of the request, never its query
	Status int
	Reason string // the X-Browser-Agent-Error reason phrase
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("proxy denied %s %s: %s", e.Method, e.URL, e.Reason)
}

// Proxy is a policy-enforcing forward proxy for one run. It is an http.Handler; Start also listens
// and serves. It is safe for concurrent use.
type Proxy struct {
	pol  *policy.Policy
	cfg  config
	auth credential // auth.go

	literals  map[netip.AddrPort]bool // IP-literal origins (any scheme) named by the policy
	https     map[string]string       // hostPort key of https sites → the site's origin
	httpSites map[string]bool         // hostPort keys of http sites
	hosts     map[string]bool         // hosts of all sites

	tr    *http.Transport // plain HTTP, to checked addresses
	tlsTr *http.Transport // https inside intercepted tunnels, verified, to checked addresses
	ca    *authority
	stats counters
	notes notebook
	sem   chan struct{} // upstream slots (WithMaxConns)

	budget *budget // the run's bytes (budget.go)

	// signInLease is set while a person holds a takeover lease on the run's browser (SetSignInLease):
	// only then may a request write, and only to a sign-in route the policy names.
	signInLease atomic.Bool

	// Open or closed, the requests in flight and the tunnels, under its own lock (tunnels.go).
	life *lifecycle

	// Set by Start.
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	stop   func() bool

	clientOnce sync.Once
	clientTr   *clientTransport
}

// New makes a proxy for the policy. It does not listen: use it as an http.Handler, or call Start.
func New(pol *policy.Policy, opts ...Option) (*Proxy, error) {
	if pol == nil {
		return nil, errors.New("proxy: nil policy")
	}
	cfg := config{bodyCap: DefaultBodyCap, maxConns: DefaultMaxConns}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.bodyCap <= 0 {
		return nil, fmt.Errorf("proxy: body cap %d must be positive", cfg.bodyCap)
	}
	if cfg.maxConns <= 0 {
		return nil, fmt.Errorf("proxy: max conns %d must be positive", cfg.maxConns)
	}
	cfg.timeouts = cfg.timeouts.withDefaults()
	if cfg.resolver == nil {
		cfg.resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.dialer == nil {
		cfg.dialer = (&net.Dialer{Timeout: cfg.timeouts.Dial}).DialContext
	}
	if cfg.logf == nil {
		cfg.logf = func(string, ...any) {}
	}
	p := &Proxy{
		pol:       pol,
		cfg:       cfg,
		auth:      newCredential(),
		literals:  map[netip.AddrPort]bool{},
		https:     map[string]string{},
		httpSites: map[string]bool{},
		hosts:     map[string]bool{},
		sem:       make(chan struct{}, cfg.maxConns),
		life:      newLifecycle(),
	}
	var err error
	if p.ca, err = newAuthority(); err != nil {
		return nil, fmt.Errorf("proxy: certificate authority: %w", err)
	}
	upTLS, err := upstreamTLS(cfg.upstreamRoots)
	if err != nil {
		return nil, err
	}
	if p.budget, err = newBudget(cfg, pol); err != nil {
		return nil, err
	}
	for _, s := range pol.Sites() {
		u, err := policy.ParseURL(s.Origin, "")
		if err != nil {
			return nil, fmt.Errorf("proxy: site origin %q: %w", s.Origin, err)
		}
		host := normalizeHost(u.Host())
		key := hostPort(host, u.Port())
		p.hosts[host] = true
		switch u.Scheme() {
		case "https":
			p.https[key] = s.Origin
		case "http":
			p.httpSites[key] = true
		}
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			p.literals[netip.AddrPortFrom(a, uint16(u.Port()))] = true
		}
	}
	p.tr = &http.Transport{
		Proxy:                  nil, // never an environment proxy
		DialContext:            p.dial,
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:     true, // bodies pass through as the upstream sent them
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        cfg.timeouts.Idle,
		ResponseHeaderTimeout:  cfg.timeouts.ResponseHeader,
		MaxResponseHeaderBytes: 1 << 20,
	}
	p.tlsTr = p.tr.Clone()
	p.tlsTr.DialContext = p.dialChecked
	p.tlsTr.TLSClientConfig = upTLS
	p.tlsTr.TLSHandshakeTimeout = cfg.timeouts.Dial
	p.tlsTr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	return p, nil
}

// Start makes a proxy and serves it on 127.0.0.1 at a free port until Close is called or ctx is
// done.
func Start(ctx context.Context, pol *policy.Policy, opts ...Option) (*Proxy, error) {
	p, err := New(pol, opts...)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.cfg.timeouts.ReadHeader,
		IdleTimeout:       p.cfg.timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(p.cfg.logf), "proxy: ", 0),
	}
	p.served = make(chan struct{})
	go func() {
		defer close(p.served)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.cfg.logf("proxy: serve: %v", err)
		}
	}()
	p.stop = context.AfterFunc(ctx, func() { p.Close() })
	return p, nil
}

// Addr is the address the proxy listens on, "127.0.0.1:PORT"; "" for a proxy made by New.
func (p *Proxy) Addr() string {
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// Server is the proxy's URL for Chromium and Playwright, "http://127.0.0.1:PORT".
func (p *Proxy) Server() string { return "http://" + p.Addr() }

// Credentials are the run's random proxy user name and password. Only a client that sends them
// (Proxy-Authorization: Basic) is served; others get 407.
func (p *Proxy) Credentials() (user, pass string) { return p.auth.user, p.auth.pass }

// ChromiumArgs are the command-line flags that make Chromium send everything through this proxy
// and nothing around it. The credentials go to Playwright's proxy option (bridge.WithProxy with
// Server and Credentials), which answers the proxy's 407; --proxy-server is repeated here so that a
// launch with these flags but without that option still reaches nothing but the proxy.
//
//   - --proxy-bypass-list=<-loopback>: loopback URLs go through the proxy too (Chromium bypasses
//     the proxy for them by default).
//   - --host-resolver-rules: see HostResolverRules.
//   - --webrtc-ip-handling-policy=disable_non_proxied_udp: WebRTC may not send UDP around the proxy.
//   - --ignore-certificate-errors-spki-list=SPKIHash(): Chromium accepts the leaves the proxy mints
//     inside its tunnels, and no other certificate it could not verify. The flag is honoured only
//     with --user-data-dir, which Playwright always passes.
//
// Chromium does not fall back to a direct connection when a fixed proxy is down, so these flags
// fail closed.
func (p *Proxy) ChromiumArgs() []string {
	return []string{
		"--proxy-server=" + p.Server(),
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=" + HostResolverRules,
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--ignore-certificate-errors-spki-list=" + p.SPKIHash(),
	}
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats { return p.stats.snapshot() }

// Disagreements is how many requests the proxy denied after the browser layer allowed them.
func (p *Proxy) Disagreements() int64 { return p.stats.disagreements.Load() }

// NoteBrowserAllowed tells the proxy that the browser layer allowed method on rawURL (a query, if
// any, is ignored, so a redacted URL will do). The bridge calls it when its route lets a request
// continue, e.g. from its decision hook. If the proxy denies the same request within NoteWindow
// (same method, origin and path for http and https; for https also the CONNECT to its origin;
// same origin for ws and wss, which reach the proxy as CONNECT), it counts a layer disagreement: the two layers should agree, so every
// disagreement is a bug in one of them or a request the browser layer could not judge (e.g. a
// name that resolves to a private address).
func (p *Proxy) NoteBrowserAllowed(method, rawURL string) {
	u, err := policy.ParseURL(rawURL, "")
	if err != nil {
		return
	}
	now := time.Now()
	switch u.Scheme() {
	case "http":
		p.notes.add(noteKeyURL(method, u.Origin()+u.Path()), now)
	case "https":
		p.notes.add(noteKeyURL(method, u.Origin()+u.Path()), now)
		p.notes.add(noteKeyOrigin(hostPort(normalizeHost(u.Host()), u.Port())), now)
	case "ws", "wss":
		p.notes.add(noteKeyOrigin(hostPort(normalizeHost(u.Host()), u.Port())), now)
	}
}

// MaxSignInBody is the longest request body a sign-in write may carry.
const MaxSignInBody = 64 << 10

// SetSignInLease tells the proxy whether a person holds a takeover lease on the run's browser.
// While held, a write to a sign-in route the policy names (policy.DecideSignIn) is forwarded with
// its body; every other write, and every write while not held, is refused as before. The caller
// is the serve layer; nothing the model or the page does reaches it.
func (p *Proxy) SetSignInLease(held bool) { p.signInLease.Store(held) }

// Close stops the proxy: the listener, every client connection and tunnel, and idle upstream
// connections. It returns after every in-flight request has ended and its decision was recorded.
func (p *Proxy) Close() error {
	if !p.life.close() {
		return nil
	}
	if p.stop != nil {
		p.stop()
	}
	var err error
	if p.srv != nil {
		err = p.srv.Close()
		<-p.served
	}
	p.life.wait()
	p.tr.CloseIdleConnections()
	p.tlsTr.CloseIdleConnections()
	if p.clientTr != nil {
		p.clientTr.CloseIdleConnections()
	}
	return err
}

// ServeHTTP handles one proxy request: absolute-form HTTP or CONNECT.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !p.auth.authorized(r) {
		// A challenge, not a decision: Chromium sends its first request without the credential
		// and repeats it with the credential after this 407. Counted, never forwarded.
		p.stats.auth.Add(1)
		p.cfg.logf("proxy: 407 %s %s: %s", policy.Cut(r.Method, 32), target(r), ReasonAuth)
		w.Header().Set("Proxy-Authenticate", `Basic realm="`+Realm+`"`)
		writeRefusal(w, http.StatusProxyAuthRequired, ReasonAuth, r.Method)
		return
	}
	if !p.life.enter() {
		p.stats.deny(ReasonClosed)
		writeRefusal(w, http.StatusServiceUnavailable, ReasonClosed, r.Method)
		return
	}
	defer p.life.leave()
	rec := &Decision{Time: start, Entry: policy.Entry{Method: policy.Cut(r.Method, 32), Layer: policy.LayerProxy}}
	if p.refuseOverBudget(w, r, rec) {
		p.finish(rec, start)
		return
	}
	ctx, cancel := p.requestContext(r.Context())
	defer cancel()
	if r.Method == http.MethodConnect {
		// A tunnel is recorded as soon as it is decided and established, not when it closes.
		recorded := sync.OnceFunc(func() { p.finish(rec, start) })
		defer recorded()
		p.serveConnect(ctx, w, r, rec, recorded)
		return
	}
	defer p.finish(rec, start)
	p.serveForward(ctx, w, r, rec)
}

// requestContext is parent, also cancelled when the proxy closes.
func (p *Proxy) requestContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(p.life.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// refuse answers with the proxy's own response and records the denial. noteKey, when not "",
// identifies the request for disagreement tracking.
func (p *Proxy) refuse(w http.ResponseWriter, rec *Decision, status int, reason, rule, noteKey string) {
	rec.Verdict, rec.Reason, rec.Rule, rec.Status = policy.Deny, reason, policy.Text(rule, policy.MaxTextLen), status
	if status == http.StatusForbidden && noteKey != "" && p.notes.seen(noteKey, time.Now()) {
		rec.Disagreement = true
		p.stats.disagreements.Add(1)
	}
	p.decided(rec)
	target := rec.Method
	if rec.Origin != "" {
		target += " " + rec.Origin + rec.Path
	}
	writeRefusal(w, status, reason, target)
}

// upstreamFailed answers 502 or 504 for an allowed request that could not be completed.
func (p *Proxy) upstreamFailed(w http.ResponseWriter, rec *Decision, err error) {
	p.stats.upstreamErrors.Add(1)
	rec.Error = policy.Text(err.Error(), policy.MaxTextLen)
	status, reason := http.StatusBadGateway, "upstream failed"
	var ne net.Error
	switch {
	case isCertError(err):
		// Never retried without verification: the request fails, naming the host.
		reason = ReasonUpstreamCert
		rec.Error = ReasonUpstreamCert + " for " + strings.TrimPrefix(rec.Origin, "https://") + ": " + rec.Error
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded):
		status, reason = http.StatusGatewayTimeout, "upstream timed out"
	}
	rec.Status = status
	w.Header().Set(HeaderError, reason)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "browser-agent proxy: %s %s%s: %s\n", rec.Method, rec.Origin, rec.Path, reason)
}

// writeRefusal writes the proxy's own short text response. target never holds a query.
func writeRefusal(w http.ResponseWriter, status int, reason, target string) {
	h := w.Header()
	h.Set(HeaderError, reason)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "browser-agent proxy denied %s: %s\n", target, reason)
}

// decided hands the record, as it stands when the verdict is taken, to the WithDecidedHook
// function.
func (p *Proxy) decided(rec *Decision) {
	if p.cfg.decided != nil {
		p.cfg.decided(*rec)
	}
}

// finish counts, logs and hands on the canonical record.
func (p *Proxy) finish(rec *Decision, start time.Time) {
	rec.Duration = time.Since(start)
	if rec.Allowed() {
		p.stats.allowed.Add(1)
	} else {
		p.stats.deny(rec.Reason)
	}
	p.cfg.logf("%s %s", CanonicalDecision, p.logRecord(rec))
	if p.cfg.hook != nil {
		p.cfg.hook(*rec)
	}
}

// target names a request's target for a log line: the CONNECT authority, or scheme://host/path
// without the query.
func target(r *http.Request) string {
	if r.Method == http.MethodConnect || r.URL == nil {
		return policy.Cut(r.Host, 300)
	}
	return policy.Cut(r.URL.Scheme+"://"+r.URL.Host+r.URL.EscapedPath(), 300)
}

// normalizeHost lower-cases and trims one trailing dot, as the policy does when it matches hosts.
func normalizeHost(h string) string {
	h = strings.ToLower(h)
	if len(h) > 1 && strings.HasSuffix(h, ".") {
		h = h[:len(h)-1]
	}
	return h
}

// hostPort joins a canonical host (IPv6 already in brackets) and a port.
func hostPort(host string, port int) string { return host + ":" + strconv.Itoa(port) }

// logWriter adapts logf to the log.Logger the http.Server wants.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", bytes.TrimRight(b, "\n"))
	return len(b), nil
}
