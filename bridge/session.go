package bridge

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

//go:embed js/init.js
var initScript string

// launchArgs are the Chromium switches of every session, on top of Playwright's defaults.
var launchArgs = []string{
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--disable-quic",
	"--no-pings",
	"--webrtc-ip-handling-policy=disable_non_proxied_udp",
	"--force-webrtc-ip-handling-policy",
	"--disable-domain-reliability",
	"--dns-prefetch-disable",
	"--no-service-autorun",
	"--password-store=basic",
	"--use-mock-keychain",
	"--disable-default-apps",
	"--deny-permission-prompts",
}

// Session is one guarded, dedicated Chromium with a fresh profile. Every request it makes is
// decided by the policy; pages are read in an isolated world. Open, Read, Links, Fields and
// Screenshot are serialized; Close may be called at any time, from any goroutine.
type Session struct {
	rt       *Runtime
	ownRT    bool
	pol      *policy.Policy
	cfg      config
	bctx     playwright.BrowserContext
	page     playwright.Page
	profile  string
	fetcher  *fetcher
	budget   *budget
	sink     *sink
	world    string // name of the reader's isolated world
	watch    string // name of init.js's watch function in the main world (watch.go)
	watchKey string // the key that drains the watch's descriptions
	version  string
	pid      int
	ua       string // the browser's User-Agent, sent on the bridge's own document fetches
	wall     string // the audit's line about the operating system's wall (wall.go)
	walled   bool   // Chromium was launched behind it

	done      chan struct{} // closed when the session closes
	closeOnce sync.Once
	closeErr  error
	expired   atomic.Bool
	timer     *time.Timer

	// The settle after load watches the route: requests in its handlers, and when one last
	// started or ended (unix ns).
	inflight   atomic.Int64
	lastActive atomic.Int64

	op sync.Mutex // serializes the page operations

	// signInLease is set by the serve layer while a person holds a takeover lease
	// (SetSignInLease); signInWrites counts the sign-in writes sent under it.
	signInLease  atomic.Bool
	signInWrites atomic.Int64
	// mainCommits counts the main frame's committed navigations; signInNavMark is its value when
	// a sign-in write answered a main-frame navigation, so that the end of the lease waits for that
	// navigation to commit (0: none pending).
	mainCommits, signInNavMark atomic.Int64

	// Shared with the route handlers, each under its own lock (state.go).
	nav   navState    // the navigation Open is making, the sub-frame navigations since it
	pages pageCache   // the page opened last
	log   decisionLog // the request decisions
}

// pageState is what the session holds about the page it opened last.
type pageState struct {
	url       string
	status    int
	hops      []Hop
	truncated bool
	withheld  bool // a credential field was found: nothing from the page is returned
	title     string
	heading   string // the first visible h1 of the main frame
	text      string
	links     []Link
	fields    []Field
	unread    int    // text runs not proven visible (snapshot.withheld)
	unproven  string // why
	vis       *visState
}

// whole reports whether the page's text is complete: no run is left for a later read.
func (st *pageState) whole() bool { return st.vis == nil || st.vis.done }

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
	s = &Session{rt: rt, pol: pol, cfg: cfg, done: make(chan struct{}), world: "browser-agent-reader-" + randomHex(8),
		watch: "__ba_" + randomHex(8), watchKey: randomHex(16), budget: newBudget(pol.Limits(), cfg.bodyCap)}
	defer func() {
		if err != nil {
			_ = s.Close()
			s = nil
		}
	}()
	if s.profile, err = os.MkdirTemp("", "browser-agent-profile-"); err != nil {
		return s, fmt.Errorf("launch: profile: %w", err)
	}
	if s.fetcher, err = newFetcher(cfg); err != nil {
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
		if s.sink, err = newSink(s.record, cfg.logf); err != nil {
			return s, fmt.Errorf("launch: refusing proxy: %w", err)
		}
		proxy.Server = "http://" + s.sink.addr()
	}
	timeout := 60 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	exe, args, err := s.command(proxy.Server)
	if err != nil {
		return s, err
	}
	s.bctx, err = rt.pw.Chromium.LaunchPersistentContext(s.profile, s.launchOptions(exe, args, proxy, timeout))
	if err != nil {
		return s, chromiumError(ctx, cfg.chromium, timeout, err)
	}
	// The browser is verified while the page is set up (two round trips to the browser each):
	// nothing is opened before both are done, and a browser that fails the check is closed.
	verified := make(chan error, 1)
	go func() { verified <- verifyLaunched(s, ctx) }()
	if err := s.setupPage(); err != nil {
		<-verified
		return s, err
	}
	if err := <-verified; err != nil {
		return s, fmt.Errorf("launch: %w", err)
	}
	s.bctx.OnPage(s.handlePopup)
	main := s.page.MainFrame()
	s.page.OnFrameNavigated(func(f playwright.Frame) {
		if f == main {
			s.mainCommits.Add(1)
		}
	})
	s.bctx.SetDefaultNavigationTimeout(float64(cfg.navTimeout.Milliseconds()))
	s.bctx.SetDefaultTimeout(float64(cfg.navTimeout.Milliseconds()))
	if cfg.sessionTTL > 0 {
		s.timer = time.AfterFunc(cfg.sessionTTL, func() {
			s.expired.Store(true)
			s.cfg.logf("bridge: session deadline passed, closing the browser")
			_ = s.Close()
		})
	}
	cfg.logf("bridge: launched chromium %s pid %d, profile %s, wall %s", s.version, s.pid, s.profile, s.wall)
	return s, nil
}

// command is the executable Playwright starts for the session (Chromium, or the wall's launcher)
// and its arguments on top of Playwright's defaults, the browser's proxy at proxyServer.
func (s *Session) command(proxyServer string) (exe string, args []string, err error) {
	exe, wallArgs, err := s.planWall(proxyServer)
	if err != nil {
		return "", nil, err
	}
	return exe, append(append(append([]string(nil), launchArgs...), s.cfg.extraArgs...), wallArgs...), nil
}

// launchOptions are the Playwright options of the session's Chromium: exe (Chromium, or the
// wall's launcher) with args on top of Playwright's defaults, behind proxy, bounded by timeout.
func (s *Session) launchOptions(exe string, args []string, proxy *playwright.Proxy, timeout time.Duration) playwright.BrowserTypeLaunchPersistentContextOptions {
	return playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath:  playwright.String(exe),
		Headless:        playwright.Bool(true),
		ChromiumSandbox: playwright.Bool(os.Geteuid() != 0), // Playwright adds --no-sandbox unless this is true
		Args:            args,
		Proxy:           proxy,
		ServiceWorkers:  playwright.ServiceWorkerPolicyBlock,
		AcceptDownloads: playwright.Bool(false),
		DownloadsPath:   playwright.String(filepath.Join(s.profile, "downloads")),
		ArtifactsDir:    playwright.String(filepath.Join(s.profile, "artifacts")),
		Timeout:         playwright.Float(float64(timeout.Milliseconds())),
		HandleSIGINT:    playwright.Bool(false),
		HandleSIGTERM:   playwright.Bool(false),
		HandleSIGHUP:    playwright.Bool(false),
	}
}

// setupPage installs the init script and the request routes on the browser context, then takes
// its page (closing any other). Routes are in place before the page exists, so that no request
// of it is ever unrouted.
func (s *Session) setupPage() error {
	script := strings.NewReplacer("__BA_WATCH__", s.watch, "__BA_KEY__", s.watchKey).Replace(initScript)
	if err := s.bctx.AddInitScript(playwright.Script{Content: playwright.String(script)}); err != nil {
		return fmt.Errorf("launch: init script: %w", err)
	}
	all := func(string) bool { return true }
	if err := s.bctx.Route(all, s.handleRoute); err != nil {
		return fmt.Errorf("launch: route: %w", err)
	}
	if err := s.bctx.RouteWebSocket(all, s.handleWebSocket); err != nil {
		return fmt.Errorf("launch: websocket route: %w", err)
	}
	if pages := s.bctx.Pages(); len(pages) > 0 {
		s.page = pages[0]
		for _, p := range pages[1:] {
			go func() { _ = p.Close() }()
		}
		return nil
	}
	var err error
	if s.page, err = s.bctx.NewPage(); err != nil {
		return fmt.Errorf("launch: page: %w", err)
	}
	return nil
}

// verifyLaunched is the launch's check of the browser; tests replace it to see a failing check
// refuse the session.
var verifyLaunched = (*Session).verifyBrowser

// verifyBrowser checks that the browser behind the context is the one this session launched: the
// browser process reported over CDP must be a descendant of this process and run with this
// session's fresh user data directory. The bridge never attaches to a browser it did not launch.
func (s *Session) verifyBrowser(ctx context.Context) error {
	b := s.bctx.Browser()
	if b == nil {
		return fmt.Errorf("%w: no browser behind the context", ErrNotLaunched)
	}
	s.version = b.Version()
	if s.version == "" {
		return fmt.Errorf("%w: browser reports no version", ErrNotLaunched)
	}
	cdp, err := b.NewBrowserCDPSession()
	if err != nil {
		return fmt.Errorf("%w: browser session: %w", ErrNotLaunched, err)
	}
	defer func() { _ = cdp.Detach() }()
	var info struct {
		ProcessInfo []struct {
			Type string `json:"type"`
			ID   int    `json:"id"`
		} `json:"processInfo"`
	}
	if err := cdpCall(ctx, cdp, "SystemInfo.getProcessInfo", nil, &info); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLaunched, err)
	}
	var ver struct {
		UserAgent string `json:"userAgent"`
	}
	if err := cdpCall(ctx, cdp, "Browser.getVersion", nil, &ver); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLaunched, err)
	}
	s.ua = ver.UserAgent
	for _, p := range info.ProcessInfo {
		if p.Type == "browser" {
			s.pid = p.ID
		}
	}
	if s.pid <= 0 {
		return fmt.Errorf("%w: no browser process reported", ErrNotLaunched)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		s.cfg.logf("bridge: no /proc, browser pid %d not checked", s.pid)
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.pid))
	if err != nil {
		return fmt.Errorf("%w: pid %d: %w", ErrNotLaunched, s.pid, err)
	}
	if !strings.Contains(string(cmdline), "--user-data-dir="+s.profile+"\x00") {
		return fmt.Errorf("%w: pid %d does not use this session's profile", ErrNotLaunched, s.pid)
	}
	if !isDescendant(s.pid, os.Getpid()) {
		return fmt.Errorf("%w: pid %d is not a child of this process", ErrNotLaunched, s.pid)
	}
	return s.verifyWall(s.pid)
}

// isDescendant reports whether pid has ancestor among its parents (Linux /proc).
func isDescendant(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// Fields after the command name, which is in parentheses and may hold spaces.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// Version is the launched Chromium's version.
func (s *Session) Version() string { return s.version }

// PID is the process id of the session's Chromium; 0 when it is not known.
func (s *Session) PID() int { return s.pid }

// Decisions returns a copy of the session's request decisions, oldest first (at most the last
// 4096).
func (s *Session) Decisions() []RequestDecision {
	return s.log.all()
}

func (s *Session) record(d RequestDecision) {
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	s.log.add(d)
	if d.Verdict != policy.Allow {
		// The URL a page chose is logged as policy.LogURL keeps it: never its query or a
		// path a route leaves open.
		s.cfg.logf("bridge: deny %s %s %s (%s): %s", d.Method, d.ResourceType, s.pol.LogURL(d.URL()), d.Frame, d.Reason)
	}
	if s.cfg.hook != nil {
		s.cfg.hook(d)
	}
}

// usable reports why the session cannot be used, or nil.
func (s *Session) usable() error {
	if s.expired.Load() {
		return ErrSessionExpired
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
		return nil
	}
}

// open is Open without the budget's last word.
func (s *Session) open(ctx context.Context, url string) (Page, error) {
	if err := s.usable(); err != nil {
		return Page{}, fmt.Errorf("open: %w", err)
	}
	d, err := s.pol.Decide(policy.DecideArgs{Method: http.MethodGet, URL: url})
	if err != nil {
		return Page{}, fmt.Errorf("open %s: policy: %w", policy.CleanURL(url), err)
	}
	s.record(RequestDecision{Entry: policy.EntryOf(policy.LayerBrowser, http.MethodGet, firstNonEmpty(d.URL, url), d), ResourceType: "document", Frame: FrameMain})
	if !d.Allowed() {
		return Page{}, &DeniedError{URL: firstNonEmpty(d.URL, url), Hop: 0, Decision: d}
	}
	s.op.Lock()
	defer s.op.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.navTimeout)
	defer cancel()

	s.pages.set(nil)

	release, err := s.budget.acquire(ctx)
	if err != nil {
		return Page{URL: d.URL}, fmt.Errorf("open %s: %w", policy.CleanURL(d.URL), err)
	}
	f, err := s.fetcher.chain(ctx, s, http.MethodGet, d.URL, documentHeaders(s.ua), nil, "document", FrameMain)
	release()
	f.dropGate() // the document is handed over later, through the route
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

	s.nav.begin(f)
	s.budget.newPage()
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
	used := s.nav.end()
	s.cfg.took("goto", start)
	if err := s.usable(); err != nil {
		return page, fmt.Errorf("open: %w", err)
	}
	if gerr != nil {
		return page, fmt.Errorf("open %s: page load error: %w", policy.CleanURL(f.url), gerr)
	}
	if !used {
		return page, fmt.Errorf("open %s: the browser did not load the bridge's response", policy.CleanURL(f.url))
	}
	start = time.Now()
	if err := s.settle(ctx); err != nil {
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
	page.Withheld, page.Unproven = c.Withheld, c.Unproven
	page.Text, page.Offset, page.Next, page.More = c.Text, c.Offset, c.Next, c.More
	return page, nil
}

// readOn reads more of st's page until its text goes past offset or is whole. Each read goes on
// where the last one stopped (visibility.go): it decides runs, withholds what is left, or ran out
// of time having decided nothing (the page's bands are then made smaller, a bounded number of
// times). When too little time is left for another phase, readOn returns what there is: More
// stays set, possibly with no new text, and the next call goes on.
func (s *Session) readOn(ctx context.Context, st *pageState, offset int) error {
	for st.vis == nil || (offset >= len(st.text) && !st.whole()) {
		snap, cred, err := s.snapshot(ctx, st.url, st.vis)
		if contextGone(err) {
			// The document the read was in went away under it: the page replaced itself
			// without a request (the route aborts every navigation the bridge did not start).
			s.cfg.logf("bridge: %s: the page replaced its document during the read: %v", policy.CleanURL(st.url), err)
			return ErrPageChanged
		}
		if err != nil {
			return err
		}
		if cred != "" {
			s.pages.withhold(st)
			s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), cred)
			return ErrCredentialRequired
		}
		s.pages.add(st, snap, s.cfg.textCap)
		if snap.withheld > 0 {
			s.cfg.logf("bridge: %s: %d text runs withheld: %s", policy.CleanURL(st.url), snap.withheld, snap.unproven)
		}
		if !st.whole() && snap.decided == 0 && time.Until(deadlineOf(ctx)) < s.cfg.pixelTime {
			return nil // too little time left for another phase: the next call goes on
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
	return c
}

// current returns the open page after checking, again, that it holds no credential field (fields
// can be added at any time after load). A page once found with one stays withheld.
func (s *Session) current(ctx context.Context) (*pageState, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	st := s.pages.get()
	if st == nil {
		return nil, ErrNoPage
	}
	if st.withheld {
		return nil, ErrCredentialRequired
	}
	defer s.cfg.took("recheck", time.Now())
	v, err := s.view(ctx, nil)
	defer v.close()
	if err != nil {
		return nil, fmt.Errorf("credential scan: %w", err)
	}
	// The watch first: a field that came and went since the last check withholds the page too.
	cred, _, err := s.quiet(ctx, v, time.Time{}, false)
	if err == nil && cred == "" {
		cred, err = s.checkCredentials(ctx, v)
	}
	if err != nil {
		return nil, fmt.Errorf("credential scan: %w", err)
	}
	if !sameOrigin(v.mainURL, st.url) || !sameOrigin(s.page.URL(), st.url) {
		return nil, ErrPageChanged
	}
	if cred != "" {
		s.pages.withhold(st)
		s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), cred)
		return nil, ErrCredentialRequired
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
	s.op.Lock()
	defer s.op.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.navTimeout)
	defer cancel()
	if e := s.budget.spentErr(); e != nil {
		return fmt.Errorf("%s: %w", op, e)
	}
	st, err := s.current(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return f(ctx, st)
}

// Read returns the chunk of the page's visible text that starts at offset (a byte offset, as
// returned in Next).
func (s *Session) Read(ctx context.Context, offset int) (c Chunk, err error) {
	err = s.withPage(ctx, "read", func(ctx context.Context, st *pageState) error {
		if offset < 0 || offset > len(st.text) {
			return fmt.Errorf("read: offset %d outside the page's %d bytes of text", offset, len(st.text))
		}
		if err := s.readOn(ctx, st, offset); err != nil {
			return err
		}
		c = s.chunk(st, offset)
		return nil
	})
	return c, err
}

// Links returns the visible links of the page, resolved and decided by the policy.
func (s *Session) Links(ctx context.Context) (links []Link, err error) {
	err = s.withPage(ctx, "links", func(ctx context.Context, st *pageState) error {
		if err := s.readOn(ctx, st, math.MaxInt); err != nil {
			return err
		}
		links = append([]Link(nil), st.links...)
		return nil
	})
	return links, err
}

// Fields returns the visible labelled values of the page (dl/dt/dd, table headers and cells,
// label and value). Form fields are never read.
func (s *Session) Fields(ctx context.Context) (fields []Field, err error) {
	err = s.withPage(ctx, "fields", func(ctx context.Context, st *pageState) error {
		if err := s.readOn(ctx, st, math.MaxInt); err != nil {
			return err
		}
		fields = append([]Field(nil), st.fields...)
		return nil
	})
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
		v, err := s.view(ctx, nil)
		defer func() { v.close() }()
		if err != nil {
			return fmt.Errorf("screenshot: credential scan: %w", err)
		}
		why, _, err := s.quiet(ctx, v, time.Now(), true)
		if err == nil && why == "" {
			if v, err = s.view(ctx, v); err == nil {
				why, err = s.checkCredentials(ctx, v)
			}
		}
		if err != nil {
			return fmt.Errorf("screenshot: credential scan: %w", err)
		}
		if why != "" {
			s.pages.withhold(st)
			s.cfg.logf("bridge: %s withheld: %s", policy.CleanURL(st.url), why)
			return fmt.Errorf("screenshot: %w", ErrCredentialRequired)
		}
		png = b
		return nil
	})
	return png, err
}

// Close stops the session's browser, removes its profile and, when the session was started with
// the package's Launch, stops the driver. It is safe to call more than once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		if s.timer != nil {
			s.timer.Stop()
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
		if s.fetcher != nil {
			s.fetcher.close()
		}
		if s.profile != "" {
			if err := os.RemoveAll(s.profile); err != nil {
				errs = append(errs, fmt.Errorf("remove profile: %w", err))
			}
		}
		if s.ownRT && s.rt != nil {
			if err := s.rt.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// chunkOf cuts text into a window of at most size bytes starting at offset, ending on a rune
// boundary and, when one is near, after a line break or space.
func chunkOf(text string, offset, size int) Chunk {
	for offset < len(text) && offset > 0 && !runeStart(text[offset]) {
		offset++
	}
	if offset >= len(text) {
		return Chunk{Offset: offset, Next: len(text)}
	}
	end := offset + size
	if end >= len(text) {
		return Chunk{Text: text[offset:], Offset: offset, Next: len(text)}
	}
	for end > offset && !runeStart(text[end]) {
		end--
	}
	if cut := strings.LastIndexAny(text[offset:end], "\n "); cut > size/2 {
		end = offset + cut + 1
	}
	return Chunk{Text: text[offset:end], Offset: offset, Next: end, More: true}
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

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

// settleQuiet is how long the page's requests must have been quiet after load (none in the
// route's handlers, none started or ended) before Open reads the page early.
const settleQuiet = 30 * time.Millisecond

// activity marks a request entering or leaving the route, for settle.
func (s *Session) activity(delta int64) {
	s.lastActive.Store(time.Now().UnixNano())
	s.inflight.Add(delta)
}

// settle waits, after the page's load event, for the requests the page makes late (scripts run
// at load, timers, lazy images) to be over: until no request has been in the route's handlers
// for settleQuiet, and at most the configured settle. A page that makes no request after load
// is read settleQuiet after it; a busy page waits the whole settle.
func (s *Session) settle(ctx context.Context) error {
	if s.cfg.settle <= 0 {
		return ctx.Err()
	}
	start := time.Now()
	end := start.Add(s.cfg.settle)
	for {
		now := time.Now()
		if !now.Before(end) {
			return ctx.Err()
		}
		quietSince := max(start.UnixNano(), s.lastActive.Load())
		if s.inflight.Load() == 0 && now.UnixNano()-quietSince >= int64(settleQuiet) {
			return ctx.Err()
		}
		if err := sleepCtx(ctx, min(5*time.Millisecond, end.Sub(now))); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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

// SetSignInLease tells the session whether a person holds a takeover lease on its browser. While
// held, a write the page makes to a sign-in route the policy names (policy.DecideSignIn) is sent,
// with its body, even as a main-frame navigation; every other write and navigation stays denied.
// Ending the lease forgets the page the agent had opened: a person acted on it, so nothing is read
// from it until the agent opens a page again. Only the serve layer calls this; no tool reaches it.
func (s *Session) SetSignInLease(held bool) {
	s.signInLease.Store(held)
	if !held {
		s.pages.set(nil)
		// Let what the person started (a sign-in submission being answered) finish before the
		// agent's next Open navigates the page, so that it does not interrupt it. Bounded.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for s.usable() == nil && s.inflight.Load() > 0 && sleepCtx(ctx, 20*time.Millisecond) == nil {
		}
		// A sign-in submission answered as a page navigation has not always committed yet: the
		// agent's next Open would be interrupted by it.
		if mark := s.signInNavMark.Swap(0); mark > 0 {
			for s.usable() == nil && s.mainCommits.Load() < mark && sleepCtx(ctx, 20*time.Millisecond) == nil {
			}
		}
		s.op.Lock()
		if s.usable() == nil {
			_ = s.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: playwright.Float(5000)})
		}
		s.op.Unlock()
		_ = s.settle(ctx)
	}
}

// SignInWrites counts the sign-in writes the session has sent under a lease.
func (s *Session) SignInWrites() int64 { return s.signInWrites.Load() }
