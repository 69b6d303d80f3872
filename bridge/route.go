package bridge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/budget"
	"github.com/browser-agent/browser-agent/bridge/internal/fetch"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// fetched is a final, non-redirect response fetched by the bridge.
type fetched struct {
	url       string // canonical URL of the final hop
	status    int
	header    http.Header
	body      []byte
	truncated bool
	hops      []Hop
	release   func() // the fulfil gate, when the body took it (budget.go)
}

// fetcher makes the bridge's own requests (internal/fetch: exactly the decided URL, no redirect
// followed) under the router's decisions: the redirect walk (chain), and a write only under the
// sign-in lease (doWrite).
type fetcher struct {
	c   *fetch.Client // sent to only through do (a read) and doWrite (a write under the lease)
	cap int64
}

func newFetcher(cfg config) (*fetcher, error) {
	o := fetch.Options{Roots: cfg.roots, HeaderTimeout: cfg.navTimeout}
	if cfg.proxy != nil {
		pu, err := proxyURL(cfg.proxy)
		if err != nil {
			return nil, err
		}
		o.Proxy = pu
	}
	c, err := fetch.New(o)
	if err != nil {
		return nil, err
	}
	return &fetcher{c: c, cap: cfg.bodyCap}, nil
}

func proxyURL(p *proxyConfig) (*url.URL, error) {
	server := p.server
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("proxy %q: %w", p.server, err)
	}
	if p.username != "" {
		u.User = url.UserPassword(p.username, p.password)
	}
	return u, nil
}

func (f *fetcher) close() { f.c.Close() }

func isRedirect(status int) bool { return status >= 300 && status < 400 }

// chain fetches rawURL, which the caller has already decided and found allowed, and every redirect
// hop after it. Each Location is decided as a new GET navigation; a denied hop, a chain longer
// than the policy's hop cap and a loop stop the chain before the next request is sent. Only a
// final non-redirect response is returned. On error the returned fetched, when not nil, holds
// the hops taken.
//
// body is sent only with a write, which is possible only for a sign-in route while a person holds
// the session's lease (doWrite checks both again); a 307/308 hop carries it on under the same check.
func (f *fetcher) chain(ctx context.Context, ro *router, method, rawURL string, hdr http.Header, body []byte, rtype, frame string) (*fetched, error) {
	walk := NewRedirects(ro.pol, rawURL)
	for {
		cur := walk.URL()
		hops := walk.Hops()
		if err := ctx.Err(); err != nil {
			return &fetched{hops: hops}, err
		}
		brd := RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, method, cur, policy.Decision{}), ResourceType: rtype, Frame: frame, Hop: len(hops)}
		if e := ro.budget.Admit(); e != nil {
			ro.budgetDenied(brd, e)
			return &fetched{hops: hops}, e
		}
		var resp *http.Response
		var err error
		if method == http.MethodGet || method == http.MethodHead {
			resp, err = f.do(ctx, method, cur, hdr)
		} else {
			resp, err = f.doWrite(ctx, ro, method, cur, hdr, body)
		}
		if e := ro.budgetResponse(resp, err, brd); e != nil {
			return &fetched{hops: hops}, e
		}
		if err != nil {
			ro.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, method, cur, policy.Decision{Verdict: policy.Deny, Reason: ReasonFetchFailed}), ResourceType: rtype, Frame: frame, Hop: len(hops)})
			return &fetched{hops: hops}, fmt.Errorf("fetch %s: %w", policy.CleanURL(cur), err)
		}
		if !isRedirect(resp.StatusCode) {
			body, truncated, release, err := ro.readBody(ctx, resp, f.cap)
			resp.Body.Close()
			if err != nil {
				return &fetched{hops: hops}, fmt.Errorf("fetch %s: body: %w", policy.CleanURL(cur), err)
			}
			if method == http.MethodHead {
				body = nil
			}
			return &fetched{url: cur, status: resp.StatusCode, header: resp.Header, body: body, truncated: truncated, hops: hops, release: release}, nil
		}
		loc := resp.Header.Get("Location")
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
		// The hop is sent, and recorded, with the method a browser would use: a 303, or a 301/302
		// after a write, turns into a GET without a body; a 307/308 keeps the method and body.
		next := method
		if resp.StatusCode == http.StatusSeeOther || (method != http.MethodGet && method != http.MethodHead &&
			(resp.StatusCode == http.StatusMovedPermanently || resp.StatusCode == http.StatusFound)) {
			next = http.MethodGet
		}
		n, d, err := walk.Follow(resp.StatusCode, loc)
		if d != (policy.Decision{}) {
			ro.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, next, d.URL, d), ResourceType: rtype, Frame: frame, Hop: n})
		}
		if err != nil {
			return &fetched{hops: walk.Hops()}, err
		}
		if next != method {
			method, body = next, nil
			hdr.Del("Content-Type")
		}
	}
}

// doWrite sends a write: only while the session's sign-in lease is held, and only to a route the
// policy names under signin for this method. It is the one way a body leaves the bridge.
func (f *fetcher) doWrite(ctx context.Context, ro *router, method, rawURL string, hdr http.Header, body []byte) (*http.Response, error) {
	if !ro.lease.held.Load() {
		return nil, fmt.Errorf("method %s refused: no sign-in lease", method)
	}
	pu, err := policy.ParseURL(rawURL, "")
	if err != nil {
		return nil, err
	}
	if d := ro.pol.DecideSignIn(method, pu); !d.Allowed() {
		return nil, fmt.Errorf("method %s refused: %s", method, d.Reason)
	}
	if int64(len(body)) > maxSignInBody {
		return nil, fmt.Errorf("method %s refused: body longer than %d bytes", method, maxSignInBody)
	}
	return f.c.Send(ctx, method, rawURL, hdr, bytes.NewReader(body))
}

// maxSignInBody is the longest body a sign-in write may carry.
const maxSignInBody = 64 << 10

func (f *fetcher) do(ctx context.Context, method, rawURL string, hdr http.Header) (*http.Response, error) {
	if method != http.MethodGet && method != http.MethodHead {
		// Unreachable: every caller decided the method first. Kept so that a future caller cannot
		// send a write through the fetcher.
		return nil, fmt.Errorf("method %s refused", method)
	}
	return f.c.Send(ctx, method, rawURL, hdr, nil)
}

// forwardHeaders are the browser's request headers the fetcher passes on.
var forwardHeaders = []string{"accept", "accept-language", "user-agent", "referer", "origin"}

// dropHeaders are response headers never handed to the browser: Refresh (a navigation the bridge
// did not start), cookies (the fetcher keeps its own jar), reporting and preload hints (requests
// the browser would send on its own), and framing the fetcher already undid.
var dropHeaders = map[string]bool{
	"refresh": true, "set-cookie": true, "set-cookie2": true, "link": true, "alt-svc": true,
	"report-to": true, "reporting-endpoints": true, "nel": true, "content-security-policy-report-only": true,
	"content-security-policy": true, "strict-transport-security": true, "content-length": true,
	"content-encoding": true, "transfer-encoding": true, "connection": true, "keep-alive": true,
	"content-disposition": true, "service-worker-allowed": true, "location": true,
}

// router is the session's per-hop policy: it decides every request and redirect hop the browser
// or the bridge makes, fetches the allowed ones itself (fetcher, under the budget), fulfils them,
// and keeps the decisions.
type router struct {
	cfg     *config
	pol     *policy.Policy
	page    playwright.Page // the session's page: a request of any other is a popup's
	fetcher *fetcher
	budget  *budget.Budget
	life    *life
	act     *activity
	lease   *lease
	nav     navState    // the navigation Open is making, the sub-frame navigations since it
	log     decisionLog // the request decisions
}

// record keeps a request decision, logs a denial and passes it to the decision hook.
func (ro *router) record(d RequestDecision) {
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	ro.log.add(d)
	if d.Verdict != policy.Allow {
		// The URL a page chose is logged as policy.LogURL keeps it: never its query or a
		// path a route leaves open.
		ro.cfg.logf("bridge: deny %s %s %s (%s): %s", d.Method, d.ResourceType, ro.pol.LogURL(d.URL()), d.Frame, d.Reason)
	}
	if ro.cfg.hook != nil {
		ro.cfg.hook(d)
	}
}

// document fetches url, decided and allowed, as the main frame's document: a fetch slot, then the
// redirect walk. The body is handed over later, through the route (navState).
func (ro *router) document(ctx context.Context, url, ua string) (*fetched, error) {
	release, err := ro.budget.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	f, err := ro.fetcher.chain(ctx, ro, http.MethodGet, url, documentHeaders(ua), nil, "document", FrameMain)
	release()
	f.dropGate()
	return f, err
}

// handleRoute decides every request the browser makes. Nothing is continued to the network: an
// allowed request is fetched by the bridge (redirect hops decided) and fulfilled with the final
// response; everything else is aborted before it leaves.
func (ro *router) handleRoute(r playwright.Route) {
	ro.act.mark(1)
	defer ro.act.mark(-1)
	req := r.Request()
	method, raw, rtype := req.Method(), req.URL(), req.ResourceType()
	frame := FrameNone
	fr := req.Frame()
	nav := req.IsNavigationRequest()
	switch {
	case fr == nil && nav:
		frame = FramePopup // a navigation whose frame does not exist yet: a new window
	case fr != nil && fr.Page() != ro.page:
		frame = FramePopup
	case fr != nil && fr.ParentFrame() == nil:
		frame = FrameMain
	case fr != nil:
		frame = FrameSub
	}
	rd := RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, method, raw, policy.Decision{}), ResourceType: rtype, Frame: frame}
	// A navigation aborted as "blocked by client" commits Chromium's error page in place of the
	// document; "aborted" cancels it and leaves the current document as it was.
	code := "blockedbyclient"
	if nav {
		code = "aborted"
	}
	abort := func() { _ = r.Abort(code) }
	deny := func(reason string) {
		rd.Verdict, rd.Reason = policy.Deny, reason
		ro.record(rd)
		abort()
	}
	if ro.life.usable() != nil {
		deny(ReasonClosed)
		return
	}
	if e := ro.budget.Spent(); e != nil {
		ro.budgetDenied(rd, e)
		abort()
		return
	}
	if frame == FramePopup {
		deny(ReasonPopup)
		return
	}
	write := method != http.MethodGet && method != http.MethodHead
	signIn := write && ro.lease.held.Load()
	if nav && frame == FrameMain && !signIn {
		// The only main-frame navigation allowed is the one Open is making, once. Script
		// navigation, meta refresh, form submission, reload and history traversal are aborted.
		p, ok := ro.nav.take(raw, method == http.MethodGet)
		if !ok {
			deny(ReasonNotRequested)
			return
		}
		rd.Verdict, rd.Reason = policy.Allow, "opened by the bridge"
		ro.record(rd)
		ro.fulfil(r, p.resp, rtype)
		return
	}
	if nav && frame == FrameSub {
		if ro.nav.frameNav(ro.cfg.frameCap) {
			deny(ReasonFrameCap)
			return
		}
	}
	var d policy.Decision
	var err error
	if signIn {
		// A person holds the lease: a write to a sign-in route the policy names is allowed; any
		// other write is decided, and denied, as always.
		if pu, perr := policy.ParseURL(raw, ""); perr == nil {
			d = ro.pol.DecideSignIn(method, pu)
		} else {
			d, err = ro.pol.Decide(policy.DecideArgs{Method: method, URL: raw})
		}
	} else {
		d, err = ro.pol.Decide(policy.DecideArgs{Method: method, URL: raw})
	}
	rd.Verdict, rd.Rule, rd.Reason = d.Verdict, d.Rule, d.Reason
	if err != nil || !d.Allowed() {
		if err != nil {
			rd.Reason = "policy error"
		}
		rd.Verdict = policy.Deny
		ro.record(rd)
		abort()
		return
	}
	if e := ro.budget.PageRequest(); e != nil {
		ro.budgetDenied(rd, e)
		abort()
		return
	}
	ctx, cancel := ro.requestContext()
	defer cancel()
	release, err := ro.budget.Acquire(ctx)
	if err != nil {
		if e, ok := IsBudget(err); ok {
			ro.budgetDenied(rd, e)
		} else {
			rd.Verdict, rd.Rule, rd.Reason = policy.Deny, "", ReasonSlotTimeout
			ro.record(rd)
		}
		abort()
		return
	}
	defer release()
	ro.record(rd)
	hdr := http.Header{}
	for _, k := range forwardHeaders {
		if v, ok := req.Headers()[k]; ok {
			hdr.Set(k, v)
		}
	}
	var body []byte
	if write {
		if v, ok := req.Headers()["content-type"]; ok {
			hdr.Set("Content-Type", v)
		}
		if body, err = req.PostDataBuffer(); err != nil {
			abort()
			return
		}
	}
	f, err := ro.fetcher.chain(ctx, ro, method, d.URL, hdr, body, rtype, frame)
	if err != nil {
		abort()
		return
	}
	if write {
		ro.lease.wrote(rtype == "document" && frame == FrameMain)
	}
	ro.fulfil(r, f, rtype)
}

// fulfil hands a final response to the browser. A redirect status is never fulfilled: Chromium
// would follow it where no route sees the next hop.
func (ro *router) fulfil(r playwright.Route, f *fetched, rtype string) {
	if f == nil || isRedirect(f.status) || f.status < 100 {
		f.dropGate()
		_ = r.Abort("blockedbyclient")
		return
	}
	headers := map[string]string{}
	for k, v := range f.header {
		lk := strings.ToLower(k)
		if dropHeaders[lk] {
			continue
		}
		headers[lk] = strings.Join(v, ", ")
	}
	if headers["content-type"] == "" && rtype == "document" {
		headers["content-type"] = "text/plain; charset=utf-8"
	}
	release := ro.gateFor(f)
	if release == nil {
		_ = r.Abort("blockedbyclient")
		return
	}
	defer release()
	status := f.status
	if err := r.Fulfill(playwright.RouteFulfillOptions{Status: &status, Headers: headers, Body: f.body}); err != nil {
		ro.cfg.logf("bridge: fulfil %s: %v", policy.CleanURL(f.url), err)
	}
}

// handleWebSocket closes every WebSocket the page opens; the route never connects to a server.
func (ro *router) handleWebSocket(ws playwright.WebSocketRoute) {
	ro.act.mark(0)
	ro.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, http.MethodGet, ws.URL(), policy.Decision{Verdict: policy.Deny, Reason: ReasonWebSocket}), ResourceType: "websocket", Frame: FrameNone})
	ws.Close(playwright.WebSocketRouteCloseOptions{Code: playwright.Int(1008), Reason: playwright.String("blocked by browser-agent")})
}

// handlePopup closes every page but the session's own. It closes from a goroutine: closing inside
// the event handler hangs the driver connection.
func (ro *router) handlePopup(p playwright.Page) {
	if p == ro.page {
		return
	}
	ro.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, http.MethodGet, p.URL(), policy.Decision{Verdict: policy.Deny, Reason: ReasonPopup}), ResourceType: "document", Frame: FramePopup})
	go func() { _ = p.Close() }()
}

// requestContext bounds one routed request's fetch by the navigation timeout and the session's
// life.
func (ro *router) requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(ro.life.ctx, ro.cfg.navTimeout)
}

// sameURL compares two URLs as the policy canonicalizes them (fragment dropped).
func sameURL(a, b string) bool {
	ua, err := policy.ParseURL(a, "")
	if err != nil {
		return false
	}
	ub, err := policy.ParseURL(b, "")
	if err != nil {
		return false
	}
	return ua.String() == ub.String()
}
