package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
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
	pol        *policy.Policy
	cfg        config
	user, pass string
	wantAuth   []byte // "user:pass"

	literals  map[netip.AddrPort]bool // IP-literal origins (any scheme) named by the policy
	https     map[string]string       // hostPort key of https sites → the site's origin
	httpSites map[string]bool         // hostPort keys of http sites
	hosts     map[string]bool         // hosts of all sites

	tr    *http.Transport // plain HTTP, to checked addresses
	tlsTr *http.Transport // https inside intercepted tunnels, verified, to checked addresses
	ca    *authority
	stats counters
	notes notebook
	sem   chan struct{}
	done  chan struct{} // closed by Close

	budget *budget // the run's bytes (budget.go)

	// signInLease is set while a person holds a takeover lease on the run's browser (SetSignInLease):
	// only then may a request write, and only to a sign-in route the policy names.
	signInLease atomic.Bool

	mu       sync.Mutex
	closed   bool
	tunnels  map[net.Conn]struct{}
	inflight sync.WaitGroup

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
		user:      "ba-" + rand.Text(),
		pass:      rand.Text(),
		literals:  map[netip.AddrPort]bool{},
		https:     map[string]string{},
		httpSites: map[string]bool{},
		hosts:     map[string]bool{},
		sem:       make(chan struct{}, cfg.maxConns),
		done:      make(chan struct{}),
		tunnels:   map[net.Conn]struct{}{},
	}
	p.wantAuth = []byte(p.user + ":" + p.pass)
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
func (p *Proxy) Credentials() (user, pass string) { return p.user, p.pass }

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
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	if p.stop != nil {
		p.stop()
	}
	var err error
	if p.srv != nil {
		err = p.srv.Close()
		<-p.served
	}
	p.inflight.Wait()
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
	if !p.authorized(r) {
		// A challenge, not a decision: Chromium sends its first request without the credential
		// and repeats it with the credential after this 407. Counted, never forwarded.
		p.stats.auth.Add(1)
		p.cfg.logf("proxy: 407 %s %s: %s", policy.Cut(r.Method, 32), target(r), ReasonAuth)
		w.Header().Set("Proxy-Authenticate", `Basic realm="`+Realm+`"`)
		writeRefusal(w, http.StatusProxyAuthRequired, ReasonAuth, r.Method)
		return
	}
	if !p.enter() {
		p.stats.deny(ReasonClosed)
		writeRefusal(w, http.StatusServiceUnavailable, ReasonClosed, r.Method)
		return
	}
	defer p.inflight.Done()
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
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// serveForward decides a plain-HTTP request in absolute form.
func (p *Proxy) serveForward(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision) {
	if !r.URL.IsAbs() {
		p.refuse(w, rec, http.StatusBadRequest, ReasonNotProxy, "request target is not an absolute URL", "")
		return
	}
	u, err := policy.ParseURL(r.RequestURI, "")
	if err != nil {
		d, _ := p.pol.Decide(policy.DecideArgs{Method: r.Method, URL: r.RequestURI})
		p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, "")
		return
	}
	p.serveURL(ctx, w, r, rec, u, "http")
}

// serveURL decides one request for the full canonical URL u, a plain-HTTP request (scheme http)
// or one read inside an intercepted tunnel (scheme https), and forwards it when it is allowed: to
// the checked address, with exactly the canonical path and query that were decided.
func (p *Proxy) serveURL(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision, u *policy.URL, scheme string) {
	rec.Origin, rec.Path = u.Origin(), u.Path()
	note := noteKeyURL(r.Method, u.Origin()+u.Path())
	if isUpgrade(r.Header) {
		p.refuse(w, rec, http.StatusForbidden, ReasonUpgrade, "upgrade "+policy.Cut(r.Header.Get("Upgrade"), 32), note)
		return
	}
	var d policy.Decision
	body := io.Reader(http.NoBody)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A write: only to a sign-in route, and only while a person holds the lease.
		if !p.signInLease.Load() {
			p.refuse(w, rec, http.StatusForbidden, policy.ReasonWriteMethod, "method "+rec.Method, note)
			return
		}
		if d = p.pol.DecideSignIn(r.Method, u); !d.Allowed() {
			p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, note)
			return
		}
		if r.ContentLength < 0 || r.ContentLength > MaxSignInBody {
			p.refuse(w, rec, http.StatusForbidden, ReasonBody, "sign-in body longer than the cap", note)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, MaxSignInBody+1))
		if err != nil || int64(len(b)) != r.ContentLength {
			p.refuse(w, rec, http.StatusForbidden, ReasonBody, "sign-in body unreadable", note)
			return
		}
		body = bytes.NewReader(b)
	} else if r.ContentLength != 0 {
		p.refuse(w, rec, http.StatusForbidden, ReasonBody, "body on "+r.Method, note)
		return
	} else {
		d = p.pol.DecideURL(r.Method, u)
	}
	if !d.Allowed() {
		p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, note)
		return
	}
	if u.Scheme() != scheme {
		// An https URL in absolute form would need the proxy to originate TLS; browsers use CONNECT.
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonScheme, u.Scheme()+" must use CONNECT", note)
		return
	}
	addr, rule, reason := p.checkAddress(ctx, u.Host(), u.Port())
	if reason != "" {
		p.refuse(w, rec, http.StatusForbidden, reason, rule, note)
		return
	}
	target, ok := forwardURL(u, addr)
	if !ok {
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonMalformed, "path cannot be forwarded exactly", note)
		return
	}
	if scheme == "http" {
		// A request inside a tunnel runs on the tunnel's slot: HTTP/1.1 sends one at a time.
		if !p.acquire() {
			p.refuse(w, rec, http.StatusServiceUnavailable, ReasonTooMany, "", "")
			return
		}
		defer p.release()
	}
	rec.Verdict, rec.Rule, rec.Reason, rec.Addr = policy.Allow, d.Rule, d.Reason, addr.String()
	p.decided(rec)

	hdr := r.Header.Clone()
	removeHopHeaders(hdr)
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = []string{""} // do not let the transport add Go's
	}
	tr := p.tr
	if scheme == "https" {
		tr = p.tlsTr
		ctx = context.WithValue(ctx, checkedAddrKey{}, addr)
	}
	out := (&http.Request{
		Method:     r.Method,
		URL:        target,
		Host:       strings.TrimPrefix(u.Origin(), scheme+"://"),
		Header:     hdr,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Body:       io.NopCloser(body),
	}).WithContext(ctx)
	if body != http.NoBody {
		out.ContentLength = r.ContentLength
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		p.upstreamFailed(w, rec, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		p.upstreamFailed(w, rec, errors.New("upstream switched protocols"))
		return
	}
	p.copyResponse(w, r, resp, rec)
}

// copyResponse writes the upstream's response to the client, cut at the body cap.
func (p *Proxy) copyResponse(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *Decision) {
	h := w.Header()
	removeHopHeaders(resp.Header)
	for k, vv := range resp.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Browser-Agent-") {
			continue // only the proxy speaks for the proxy
		}
		h[k] = vv
	}
	h.Del("Content-Length")
	limit := p.cfg.bodyCap
	hasBody := r.Method != http.MethodHead && resp.StatusCode >= 200 &&
		resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	declaredOver := false
	if cl := resp.ContentLength; cl >= 0 {
		if hasBody && cl > limit {
			declaredOver = true
			cl = limit
			h.Set(HeaderTruncated, fmt.Sprintf("body cut at %d bytes", limit))
		}
		h.Set("Content-Length", strconv.FormatInt(cl, 10))
	}
	rec.Status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if !hasBody {
		return
	}
	src := &readErr{r: p.budget.count(io.LimitReader(resp.Body, limit))}
	n, err := io.Copy(w, src)
	rec.BytesIn = n
	switch {
	case src.err != nil:
		rec.Error = "reading upstream body: " + policy.Text(src.err.Error(), policy.MaxTextLen)
		p.stats.upstreamErrors.Add(1)
		panic(http.ErrAbortHandler) // the client must not take a cut body for a whole one
	case err != nil:
		rec.Error = "writing to client: " + policy.Text(err.Error(), policy.MaxTextLen)
		return
	}
	if declaredOver {
		rec.Truncated = true
		p.stats.truncated.Add(1)
		return
	}
	if n == limit && resp.ContentLength < 0 {
		var one [1]byte
		if m, _ := io.ReadFull(resp.Body, one[:]); m > 0 {
			// The length was not declared, so the client cannot be told with a header; the
			// connection is cut instead, and the client sees an incomplete body.
			rec.Truncated = true
			p.stats.truncated.Add(1)
			panic(http.ErrAbortHandler)
		}
	}
}

// serveConnect establishes a tunnel to an https origin the policy names, records it, and
// intercepts it: every request inside is decided on its own (intercept).
func (p *Proxy) serveConnect(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision, recorded func()) {
	u, rule, reason := p.decideConnect(r.Host)
	note := ""
	if u != nil {
		rec.Origin = u.Origin()
		note = noteKeyOrigin(hostPort(normalizeHost(u.Host()), u.Port()))
	}
	if reason == "" && isUpgrade(r.Header) {
		rule, reason = "upgrade on CONNECT", ReasonUpgrade
	}
	if reason != "" {
		p.refuse(w, rec, http.StatusForbidden, reason, rule, note)
		return
	}
	addr, arule, areason := p.checkAddress(ctx, u.Host(), u.Port())
	if areason != "" {
		p.refuse(w, rec, http.StatusForbidden, areason, arule, note)
		return
	}
	if !p.acquire() {
		p.refuse(w, rec, http.StatusServiceUnavailable, ReasonTooMany, "", "")
		return
	}
	defer p.release()
	rec.Verdict, rec.Rule, rec.Reason, rec.Addr = policy.Allow, rule, ReasonOriginAllowed, addr.String()
	p.decided(rec)

	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.upstreamFailed(w, rec, fmt.Errorf("hijack: %w", err))
		return
	}
	if !p.track(client) {
		client.Close()
		rec.Error = ErrClosed.Error()
		return
	}
	defer p.untrack(client)
	defer client.Close()
	client.SetDeadline(time.Time{})
	rec.Status = http.StatusOK
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		rec.Error = "writing to client: " + policy.Text(err.Error(), policy.MaxTextLen)
		return
	}
	recorded()
	// Bytes the client sent after its CONNECT header, before it saw the 200.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		early = bytes.Clone(b)
	}
	t := tunnel{origin: u.Origin(), host: normalizeHost(u.Host())}
	if err := p.intercept(ctx, client, early, t); err != nil {
		p.cfg.logf("proxy: tunnel to %s: %s", t.origin, policy.Text(err.Error(), policy.MaxTextLen))
	}
}

// decideConnect decides a CONNECT authority at the origin level: host and port must be those of
// an https site of the policy. u is nil when the authority does not parse.
func (p *Proxy) decideConnect(authority string) (u *policy.URL, rule, reason string) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil || host == "" || port == "" || strings.ContainsAny(authority, "/?#@\\ \t") {
		return nil, "connect target is not host:port", policy.ReasonMalformed
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, "connect port is not 1-65535", policy.ReasonMalformed
	}
	u, err = policy.ParseURL("https://"+authority+"/", "")
	if err != nil {
		return nil, "connect target is not host:port", policy.ReasonMalformed
	}
	h := normalizeHost(u.Host())
	key := hostPort(h, u.Port())
	if origin, ok := p.https[key]; ok {
		return u, origin + " connect", ""
	}
	if p.httpSites[key] {
		// A tunnel to an http origin could only carry a WebSocket (Chromium tunnels ws:// too).
		return u, "connect to an http origin", policy.ReasonScheme
	}
	if p.hosts[h] {
		return u, "", policy.ReasonPort
	}
	return u, "", policy.ReasonHost
}

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

func (p *Proxy) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, p.wantAuth) == 1
}

func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

func (p *Proxy) acquire() bool {
	select {
	case p.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (p *Proxy) release() { <-p.sem }

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.tunnels, c)
	}
}

// forwardURL is the URL of the outbound request: exactly the canonical path and query that were
// decided, and for http the checked address. An https URL keeps the origin's host:port, which
// keys the connection pool and is the name verified in the upstream's certificate; its
// connections are dialed to the checked address all the same (dialChecked). ok is false when
// net/http cannot send that path unchanged.
func forwardURL(u *policy.URL, addr netip.AddrPort) (*url.URL, bool) {
	path := u.Path()
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	out := &url.URL{Scheme: "http", Host: addr.String(), RawQuery: u.RawQuery()}
	out.ForceQuery = out.RawQuery == "" && strings.HasSuffix(u.String(), "?") // an empty query is kept
	if u.Scheme() == "https" {
		out.Scheme, out.Host = "https", hostPort(u.Host(), u.Port())
	}
	if !strings.HasPrefix(path, "//") {
		out.Opaque = path // sent as is
		return out, true
	}
	// An Opaque starting with "//" would be sent as an absolute URL; use Path and check that
	// net/url escapes it back to the same bytes.
	dec, err := url.PathUnescape(path)
	if err != nil {
		return nil, false
	}
	out.Path, out.RawPath = dec, path
	return out, out.EscapedPath() == path
}

var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopHeaders removes the hop-by-hop headers, those named in Connection included, and with
// them the proxy credential.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// isUpgrade reports whether a request asks to switch protocols (WebSocket, h2c).
func isUpgrade(h http.Header) bool {
	if len(h.Values("Upgrade")) > 0 {
		return true
	}
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), "upgrade") {
				return true
			}
		}
	}
	return false
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

// readErr remembers the error of the reader it wraps, so a failed upstream read can be told from
// a failed client write.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
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

// logWriter adapts logf to the log.Logger the http.Server wants.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", bytes.TrimRight(b, "\n"))
	return len(b), nil
}
