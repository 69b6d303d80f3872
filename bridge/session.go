package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/budget"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// Session is one guarded, dedicated Chromium with a fresh profile. Every request it makes is
// decided by the policy; pages are read in an isolated world. Open, Read, Links, Fields and
// Screenshot are serialized; Close may be called at any time, from any goroutine.
//
// Session is the façade over one type per job, each holding only what its job needs (doc.go
// lists them); the configuration they share is read-only after the launch.
type Session struct {
	rt    *Runtime
	ownRT bool
	pol   *policy.Policy
	cfg   config
	bctx  playwright.BrowserContext
	page  playwright.Page
	sink  *sink // the refusing proxy, when the session has no egress proxy

	proc  *browserProc
	route *router
	read  *pageReader
	act   *activity
	lease *lease
	life  *life
	pages pageCache // the page opened last

	op    sync.Mutex // serializes the page operations (lockOp)
	ahead aheadSlot  // the read ahead of the page, if any (ahead.go)
}

// life is the session's end: closed once (Close), or past its deadline (WithSessionTimeout).
type life struct {
	ctx       context.Context // done when the session closes: every routed fetch's context derives from it
	end       context.CancelFunc
	closeOnce sync.Once
	closeErr  error
	expired   atomic.Bool
	timer     *time.Timer
}

// newLife is a session's life, open until end is called (Close).
func newLife() *life {
	l := &life{}
	l.ctx, l.end = context.WithCancel(context.Background())
	return l
}

// usable reports why the session cannot be used, or nil.
func (l *life) usable() error {
	if l.expired.Load() {
		return ErrSessionExpired
	}
	if l.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// Launch starts a driver and one guarded Chromium for pol. Close stops both. To launch many
// sessions, start one Runtime with NewRuntime and call its Launch.
func Launch(ctx context.Context, pol *policy.Policy, opts ...Option) (*Session, error) {
	rt, err := NewRuntime(opts...)
	if err != nil {
		return nil, err
	}
	s, err := rt.Launch(ctx, pol)
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	s.ownRT = true
	return s, nil
}

func launch(ctx context.Context, rt *Runtime, pol *policy.Policy, cfg config) (s *Session, err error) {
	if pol == nil {
		panic("bridge: Launch with a nil policy")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	s = &Session{rt: rt, pol: pol, cfg: cfg, act: &activity{}, lease: &lease{}, life: newLife()}
	s.proc = &browserProc{cfg: &s.cfg, pol: pol}
	s.route = &router{cfg: &s.cfg, pol: pol, budget: budget.New(pol.Limits(), cfg.bodyCap), life: s.life, act: s.act, lease: s.lease}
	watch := &watcher{cfg: &s.cfg, name: "__ba_" + randomHex(8), key: randomHex(16), act: s.act}
	defer func() {
		if err != nil {
			_ = s.Close()
			s = nil
		}
	}()
	if s.proc.profile, err = os.MkdirTemp("", "browser-agent-profile-"); err != nil {
		return s, fmt.Errorf("launch: profile: %w", err)
	}
	if s.route.fetcher, err = newFetcher(cfg); err != nil {
		return s, fmt.Errorf("launch: %w", err)
	}
	proxy := &playwright.Proxy{}
	if cfg.proxy != nil {
		proxy.Server = cfg.proxy.server
		if cfg.proxy.username != "" {
			proxy.Username = playwright.String(cfg.proxy.username)
			proxy.Password = playwright.String(cfg.proxy.password)
		}
	} else {
		if s.sink, err = newSink(s.route.record, cfg.logf); err != nil {
			return s, fmt.Errorf("launch: refusing proxy: %w", err)
		}
		proxy.Server = "http://" + s.sink.addr()
	}
	timeout := 60 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	exe, args, err := s.proc.command(proxy.Server)
	if err != nil {
		return s, err
	}
	s.bctx, err = rt.pw.Chromium.LaunchPersistentContext(s.proc.profile, s.proc.launchOptions(exe, args, proxy, timeout))
	if why := launchExit(errText(err)); err != nil && strings.HasPrefix(why, "signal ") && ctx.Err() == nil {
		// Chromium crashed at launch (seen under the suite's load: SIGSEGV in its zygote, about
		// once in a few hundred launches). Once more, on a fresh profile, the first cause logged;
		// an exit with a status (a binary that cannot run here) is not retried.
		cfg.logf("bridge: chromium crashed at launch (%s); launching once more", why)
		_ = os.RemoveAll(s.proc.profile)
		if s.proc.profile, err = os.MkdirTemp("", "browser-agent-profile-"); err != nil {
			return s, fmt.Errorf("launch: profile: %w", err)
		}
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		s.bctx, err = rt.pw.Chromium.LaunchPersistentContext(s.proc.profile, s.proc.launchOptions(exe, args, proxy, timeout))
	}
	if err != nil {
		return s, chromiumError(ctx, cfg.chromium, timeout, err)
	}
	// The browser is verified while the page is set up (two round trips to the browser each):
	// nothing is opened before both are done, and a browser that fails the check is closed.
	verified := make(chan error, 1)
	go func() { verified <- verifyLaunched(s, ctx) }()
	if err := s.setupPage(watch.script()); err != nil {
		<-verified
		return s, err
	}
	if err := <-verified; err != nil {
		return s, fmt.Errorf("launch: %w", err)
	}
	s.read = &pageReader{cfg: &s.cfg, pol: pol, bctx: s.bctx, page: s.page, world: "browser-agent-reader-" + randomHex(8), watch: watch, act: s.act}
	s.bctx.OnPage(s.route.handlePopup)
	main := s.page.MainFrame()
	s.page.OnFrameNavigated(func(f playwright.Frame) {
		if f == main {
			s.lease.commits.Add(1)
		}
	})
	s.bctx.SetDefaultNavigationTimeout(float64(cfg.navTimeout.Milliseconds()))
	s.bctx.SetDefaultTimeout(float64(cfg.navTimeout.Milliseconds()))
	if cfg.sessionTTL > 0 {
		s.life.timer = time.AfterFunc(cfg.sessionTTL, func() {
			s.life.expired.Store(true)
			s.cfg.logf("bridge: session deadline passed, closing the browser")
			_ = s.Close()
		})
	}
	cfg.logf("bridge: launched chromium %s pid %d, profile %s, wall %s", s.proc.version, s.proc.pid, s.proc.profile, s.proc.wall)
	return s, nil
}

// setupPage installs the init script (script) and the request routes on the browser context, then takes
// its page (closing any other). Routes are in place before the page exists, so that no request
// of it is ever unrouted.
func (s *Session) setupPage(script string) error {
	if err := s.bctx.AddInitScript(playwright.Script{Content: playwright.String(script)}); err != nil {
		return fmt.Errorf("launch: init script: %w", err)
	}
	all := func(string) bool { return true }
	if err := s.bctx.Route(all, s.route.handleRoute); err != nil {
		return fmt.Errorf("launch: route: %w", err)
	}
	if err := s.bctx.RouteWebSocket(all, s.route.handleWebSocket); err != nil {
		return fmt.Errorf("launch: websocket route: %w", err)
	}
	if pages := s.bctx.Pages(); len(pages) > 0 {
		s.page = pages[0]
		s.route.page = s.page
		for _, p := range pages[1:] {
			go func() { _ = p.Close() }()
		}
		return nil
	}
	var err error
	if s.page, err = s.bctx.NewPage(); err != nil {
		return fmt.Errorf("launch: page: %w", err)
	}
	s.route.page = s.page
	return nil
}

// Version is the launched Chromium's version.
func (s *Session) Version() string { return s.proc.version }

// PID is the process id of the session's Chromium; 0 when it is not known.
func (s *Session) PID() int { return s.proc.pid }

// Decisions returns a copy of the session's request decisions, oldest first (at most the last
// 4096).
func (s *Session) Decisions() []RequestDecision {
	return s.route.log.all()
}

// open is Open without the budget's last word.
func (s *Session) open(ctx context.Context, url string) (Page, error) {
	if err := s.life.usable(); err != nil {
		return Page{}, fmt.Errorf("open: %w", err)
	}
	d, err := s.pol.Decide(policy.DecideArgs{Method: http.MethodGet, URL: url})
	if err != nil {
		return Page{}, fmt.Errorf("open %s: policy: %w", policy.CleanURL(url), err)
	}
	s.route.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, http.MethodGet, firstNonEmpty(d.URL, url), d), ResourceType: "document", Frame: FrameMain})
	if !d.Allowed() {
		return Page{}, &DeniedError{URL: firstNonEmpty(d.URL, url), Hop: 0, Decision: d}
	}
	s.lockOp(ctx, false)
	defer s.op.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.navTimeout)
	defer cancel()

	s.pages.set(nil)

	f, err := s.route.document(ctx, d.URL, s.proc.ua)
	if err != nil {
		p := Page{URL: d.URL}
		if f != nil {
			p.Hops = f.hops
		}
		return p, fmt.Errorf("open %s: %w", policy.CleanURL(d.URL), err)
	}
	page := Page{URL: f.url, Status: f.status, Hops: f.hops, Truncated: f.truncated}
	if !readableType(f.header.Get("Content-Type")) {
		return page, fmt.Errorf("open %s: %w: %q", policy.CleanURL(f.url), ErrUnsupportedContent, f.header.Get("Content-Type"))
	}

	s.route.nav.begin(f)
	s.route.budget.NewPage()
	start := time.Now()
	_, gerr := s.page.Goto(f.url, playwright.PageGotoOptions{
		Timeout:   playwright.Float(msUntil(deadlineOf(ctx))),
		WaitUntil: playwright.WaitUntilStateCommit,
	})
	if gerr == nil {
		// A navigation the page starts while it loads (an auto-submitted form, say) is aborted,
		// and the document's load event may then never come: wait for it a bounded time only.
		wait := min(time.Until(deadlineOf(ctx)), maxLoadWait)
		if err := s.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{
			State: playwright.LoadStateLoad, Timeout: playwright.Float(float64(max(wait, time.Millisecond).Milliseconds())),
		}); err != nil {
			s.cfg.logf("bridge: %s: no load event after %v, reading it as it is", policy.CleanURL(f.url), wait)
		}
	}
	used := s.route.nav.end()
	s.cfg.took("goto", start)
	if err := s.life.usable(); err != nil {
		return page, fmt.Errorf("open: %w", err)
	}
	if gerr != nil {
		return page, fmt.Errorf("open %s: page load error: %w", policy.CleanURL(f.url), gerr)
	}
	if !used {
		return page, fmt.Errorf("open %s: the browser did not load the bridge's response", policy.CleanURL(f.url))
	}
	start = time.Now()
	if err := s.act.settle(ctx, s.cfg.settle); err != nil {
		return page, fmt.Errorf("open %s: %w", policy.CleanURL(f.url), err)
	}
	s.cfg.took("settle", start)

	st := &pageState{url: f.url, status: f.status, hops: f.hops, truncated: f.truncated}
	if !sameOrigin(s.page.URL(), f.url) {
		return page, fmt.Errorf("open %s: %w", policy.CleanURL(f.url), ErrPageChanged)
	}
	s.pages.set(st)
	// The first chunk: go on while the page's text so far is empty and more can be proven
	// visible (a read that ran out of time decided only hidden runs).
	if err := s.readOn(ctx, st, 0); err != nil {
		if errors.Is(err, ErrCredentialRequired) {
			return Page{URL: f.url, Status: f.status}, fmt.Errorf("open %s: %w", policy.CleanURL(f.url), err)
		}
		return page, fmt.Errorf("open %s: read: %w", policy.CleanURL(f.url), err)
	}
	c := s.chunk(st, 0)
	page.Title, page.Heading = st.title, st.heading
	page.Withheld, page.Unproven, page.Invisible = c.Withheld, c.Unproven, c.Invisible
	page.Account, page.WithheldRuns = c.Account, c.WithheldRuns
	page.Text, page.Offset, page.Next, page.More = c.Text, c.Offset, c.Next, c.More
	s.startAhead(st, c.Next)
	return page, nil
}

// readOn reads more of st's page until its text goes past offset or is whole. Each read goes on
// where the last one stopped (visibility.go): it decides runs, withholds what is left, or ran out
// of time having decided nothing (the page's bands are then made smaller, a bounded number of
// times). When too little time is left for another phase, readOn returns what there is: More
// stays set, possibly with no new text, and the next call goes on.
func (s *Session) readOn(ctx context.Context, st *pageState, offset int) error {
	phases := 0
	for st.vis == nil || (offset >= len(st.text) && !st.whole()) {
		began := time.Now()
		// A read proves the chunk it returns (and a quarter more, for the white space the
		// reader adds between blocks), not the whole page: the first read of a long page
		// answers at the cost of its first screens. Each later read proves four times what the
		// last did (its chunks wait, proven, for the reads after it), so that a page read to its
		// end takes a few phases, not one per chunk: every phase lays out and reads the whole
		// page again. Links and Fields (offset MaxInt) prove it all.
		want := 0
		if offset != math.MaxInt && !s.cfg.proveWhole {
			want = (s.cfg.chunkSize + s.cfg.chunkSize/4) << min(2*st.reads, 16)
		}
		st.reads++
		phases++
		snap, cred, err := s.read.snapshot(ctx, st.url, st.vis, want)
		if contextGone(err) {
			// The document the read was in went away under it: the page replaced itself
			// without a request (the route aborts every navigation the bridge did not start).
			s.cfg.logf("bridge: %s: the page replaced its document during the read: %v", policy.CleanURL(st.url), err)
			return ErrPageChanged
		}
		if err != nil && (phases > 1 || st.vis != nil) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// A phase ran out of the call's time: what the earlier ones gave, in this call or
			// in the calls before it, is the answer (a phase changes the page's state only once
			// it is read whole), and the next call goes on. (A read of a long page under load
			// failed the call in its credential scan: "Page.getFrameTree: context deadline
			// exceeded".) Only a page's first read, which has nothing to give, fails.
			s.cfg.logf("bridge: %s: a read's phase %d ran out of time: %v", policy.CleanURL(st.url), phases, err)
			return nil
		}
		if err != nil {
			return err
		}
		if cred != "" {
			s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), cred)
			return s.pages.withhold(st, cred)
		}
		s.pages.add(st, snap, s.cfg.textCap)
		if snap.withheld > 0 && !snap.stale {
			s.cfg.logf("bridge: %s: %d text runs withheld: %s", policy.CleanURL(st.url), snap.withheld, snap.unproven)
		}
		// Too little time left for another phase (it takes the pixel phase's bound, or what
		// this one took, and the read after it): the next call goes on.
		if !st.whole() && time.Until(deadlineOf(ctx)) < max(s.cfg.pixelTime, 2*time.Since(began)) {
			return nil
		}
	}
	return nil
}

// chunk is the window of st's text at offset, with what the reads withheld so far. More is set
// while text follows or runs are left for a later read.
func (s *Session) chunk(st *pageState, offset int) Chunk {
	c := chunkOf(st.text, offset, s.cfg.chunkSize)
	c.More = c.More || !st.whole()
	c.Withheld, c.Unproven = st.unread, st.unproven
	c.Invisible = st.invisibleText + st.invisibleRest
	c.Account, c.WithheldRuns = st.account, st.list
	return c
}

// current returns the open page after checking, again, that it holds no credential field (fields
// can be added at any time after load). A page once found with one stays withheld.
func (s *Session) current(ctx context.Context) (*pageState, error) {
	if err := s.life.usable(); err != nil {
		return nil, err
	}
	st := s.pages.get()
	if st == nil {
		return nil, ErrNoPage
	}
	if st.withheld {
		return nil, s.pages.credentialErr(st)
	}
	defer s.cfg.took("recheck", time.Now())
	v, err := s.read.view(ctx, nil)
	defer v.close()
	if err != nil {
		return nil, fmt.Errorf("credential scan: %w", err)
	}
	// The watch first: a field that came and went since the last check withholds the page too.
	cred, _, err := s.read.watch.quiet(ctx, v, time.Time{}, false)
	if err == nil && cred == "" {
		cred, err = s.read.checkCredentials(ctx, v)
	}
	if err != nil {
		return nil, fmt.Errorf("credential scan: %w", err)
	}
	if !sameOrigin(v.mainURL, st.url) || !sameOrigin(s.page.URL(), st.url) {
		return nil, ErrPageChanged
	}
	if cred != "" {
		s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), cred)
		return nil, s.pages.withhold(st, cred)
	}
	return st, nil
}

// contextGone says whether err is Chromium's answer to an evaluation in a document that is gone:
// its execution context was destroyed, or its target navigated, while the bridge read it.
func contextGone(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "Cannot find context with specified id") ||
		strings.Contains(m, "Execution context was destroyed") ||
		strings.Contains(m, "Inspected target navigated or closed")
}

// sameOrigin reports whether the document at u is an http(s) document of opened's origin. Every
// network navigation the bridge did not start is aborted, but a page can still replace itself
// without a request (blob:, data:, about:blank); history.pushState stays on the origin.
func sameOrigin(u, opened string) bool {
	cur, err := policy.ParseURL(u, "")
	if err != nil {
		return false
	}
	want, err := policy.ParseURL(opened, "")
	if err != nil {
		return false
	}
	return (cur.Scheme() == "http" || cur.Scheme() == "https") && cur.Origin() == want.Origin()
}

// withPage runs f on the current page under the session's lock and the navigation timeout, after
// current's checks (credential fields, a page that changed by itself). Their errors are prefixed
// with op.
func (s *Session) withPage(ctx context.Context, op string, f func(ctx context.Context, st *pageState) error) error {
	return s.withPageLate(ctx, op, f, nil)
}

// withPageLate is withPage with late, the call's answer when its own time ran out in current's
// checks (a machine too busy to answer in it; not its caller's end): late runs on the page as
// the earlier calls left it, unchecked now, so it must hand out nothing new. Nil: the error.
func (s *Session) withPageLate(ctx context.Context, op string, f func(ctx context.Context, st *pageState) error, late func(st *pageState) error) error {
	s.lockOp(ctx, op == "read")
	defer s.op.Unlock()
	timeout := s.cfg.navTimeout
	if st := s.pages.get(); st != nil && st.vis.stuck() > 0 {
		// A page whose reads ran out of time having decided nothing (a busy machine, a long
		// page) gets a call twice as long, for a pixel phase up to half of it (phaseTime):
		// 30 s by default, well inside the 60 s an MCP client commonly waits for an answer.
		timeout *= 2
	}
	call, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if e := s.route.budget.Spent(); e != nil {
		return fmt.Errorf("%s: %w", op, e)
	}
	st, err := s.current(call)
	if err != nil && late != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		if st := s.pages.get(); st != nil && !st.withheld && st.vis != nil {
			s.cfg.logf("bridge: %s: %s out of its call's time in the checks: %v (nothing new handed out; the next call goes on)", policy.CleanURL(st.url), op, err)
			return late(st)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return f(call, st)
}

// Read returns the chunk of the page's visible text that starts at offset (a byte offset, as
// returned in Next). A read that runs out of its time before it proves anything new returns
// More with no new text: the next read goes on.
func (s *Session) Read(ctx context.Context, offset int) (c Chunk, err error) {
	inside := func(st *pageState) error {
		if offset < 0 || offset > len(st.text) {
			return fmt.Errorf("read: offset %d outside the page's %d bytes of text", offset, len(st.text))
		}
		return nil
	}
	err = s.withPageLate(ctx, "read", func(ctx context.Context, st *pageState) error {
		if err := inside(st); err != nil {
			return err
		}
		s.serveAhead(ctx, st)
		if err := s.readOn(ctx, st, offset); err != nil {
			return err
		}
		c = s.chunk(st, offset)
		s.startAhead(st, c.Next)
		return nil
	}, func(st *pageState) error {
		if err := inside(st); err != nil {
			return err
		}
		c = s.chunk(st, offset)
		c.Text, c.Next, c.More = "", offset, true
		return nil
	})
	return c, err
}

// Links returns the visible links of the page, resolved and decided by the policy.
func (s *Session) Links(ctx context.Context) ([]Link, error) {
	links, _, err := partOf(ctx, s, "links", math.MaxInt, func(st *pageState) []Link { return st.links })
	return links, err
}

// LinksSoFar returns the visible links of the part of the page proven so far (at least its
// first chunk's), and whether that part is the whole page: what a page's first chunk comes with,
// without proving a long page to its end as Links does.
func (s *Session) LinksSoFar(ctx context.Context) ([]Link, bool, error) {
	return partOf(ctx, s, "links", 0, func(st *pageState) []Link { return st.links })
}

// FieldsSoFar returns the visible labelled values of the part of the page proven so far, and
// whether that part is the whole page (as LinksSoFar).
func (s *Session) FieldsSoFar(ctx context.Context) ([]Field, bool, error) {
	return partOf(ctx, s, "fields", 0, func(st *pageState) []Field { return st.fields })
}

// partOf is Links, Fields, LinksSoFar and FieldsSoFar: part of the page's state once its text is
// proven past offset (0: at least its first chunk; math.MaxInt: the whole page), and whether
// the page is proven whole.
func partOf[T any](ctx context.Context, s *Session, op string, offset int, part func(*pageState) []T) (out []T, whole bool, err error) {
	err = s.withPage(ctx, op, func(ctx context.Context, st *pageState) error {
		if err := s.readOn(ctx, st, offset); err != nil {
			return err
		}
		out, whole = slices.Clone(part(st)), st.whole()
		return nil
	})
	return out, whole, err
}

// Fields returns the visible labelled values of the page (dl/dt/dd, table headers and cells,
// label and value). Form fields are never read.
func (s *Session) Fields(ctx context.Context) ([]Field, error) {
	fields, _, err := partOf(ctx, s, "fields", math.MaxInt, func(st *pageState) []Field { return st.fields })
	return fields, err
}

// Screenshot returns a PNG of the current page's viewport. A page with a credential field is not
// shot, and a shot is handed over only when the page, quiet again, still shows none (a field that
// appeared while it was taken may be in it).
func (s *Session) Screenshot(ctx context.Context) (png []byte, err error) {
	err = s.withPage(ctx, "screenshot", func(ctx context.Context, st *pageState) error {
		b, err := s.page.Screenshot(playwright.PageScreenshotOptions{
			Type:    playwright.ScreenshotTypePng,
			Timeout: playwright.Float(msUntil(deadlineOf(ctx))),
		})
		if err != nil {
			return fmt.Errorf("screenshot: %w", err)
		}
		v, err := s.read.view(ctx, nil)
		defer func() { v.close() }()
		if err != nil {
			return fmt.Errorf("screenshot: credential scan: %w", err)
		}
		why, _, err := s.read.watch.quiet(ctx, v, time.Now(), true)
		if err == nil && why == "" {
			if v, err = s.read.view(ctx, v); err == nil {
				why, err = s.read.checkCredentials(ctx, v)
			}
		}
		if err != nil {
			return fmt.Errorf("screenshot: credential scan: %w", err)
		}
		if why != "" {
			s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), why)
			return fmt.Errorf("screenshot: %w", s.pages.withhold(st, why))
		}
		png = b
		return nil
	})
	return png, err
}

// Close stops the session's browser, removes its profile and, when the session was started with
// the package's Launch, stops the driver. It is safe to call more than once.
func (s *Session) Close() error {
	s.cancelAhead()
	s.life.closeOnce.Do(func() {
		s.life.end()
		if s.life.timer != nil {
			s.life.timer.Stop()
		}
		var errs []error
		if s.bctx != nil {
			if err := s.bctx.Close(); err != nil && !errors.Is(err, playwright.ErrTargetClosed) {
				errs = append(errs, fmt.Errorf("close browser: %w", err))
			}
		}
		if s.sink != nil {
			if err := s.sink.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close refusing proxy: %w", err))
			}
		}
		if s.route.fetcher != nil {
			s.route.fetcher.close()
		}
		if s.proc.profile != "" {
			if err := os.RemoveAll(s.proc.profile); err != nil {
				errs = append(errs, fmt.Errorf("remove profile: %w", err))
			}
		}
		if s.ownRT && s.rt != nil {
			if err := s.rt.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.life.closeErr = errors.Join(errs...)
	})
	return s.life.closeErr
}

// readableType reports whether a final response is a document the bridge hands to the browser.
func readableType(ct string) bool {
	if ct == "" {
		return true // the fulfilled response gets text/plain
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch {
	case mt == "text/html", mt == "application/xhtml+xml", mt == "text/plain", mt == "application/json",
		mt == "text/xml", mt == "application/xml", strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	return false
}

func documentHeaders(ua string) http.Header {
	h := http.Header{}
	if ua != "" {
		h.Set("User-Agent", ua)
	}
	h.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	h.Set("Accept-Language", "en-US,en;q=0.9")
	return h
}

// maxLoadWait bounds the wait for a committed document's load event.
const maxLoadWait = 5 * time.Second

func msUntil(t time.Time) float64 {
	return float64(max(time.Until(t), time.Millisecond).Milliseconds())
}

func deadlineOf(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(DefaultNavigationTimeout)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Open decides url and, when it is allowed, fetches it hop by hop (deciding every redirect as a
// new navigation), hands the final response to the browser and reads the page. A denial of url
// itself is a *DeniedError with Hop 0 and happens before any browser work. A page with a
// credential field returns only URL and Status, and ErrCredentialRequired. When a budget is
// spent, before or while the page loads, Open returns a *BudgetError and nothing of the page but
// its URL and status.
func (s *Session) Open(ctx context.Context, url string) (Page, error) {
	if e := s.route.budget.Spent(); e != nil {
		return Page{}, fmt.Errorf("open: %w", e)
	}
	p, err := s.open(ctx, url)
	if e := s.route.budget.Spent(); e != nil {
		return Page{URL: p.URL, Status: p.Status}, fmt.Errorf("open %s: %w", policy.CleanURL(url), e)
	}
	return p, err
}
