package bridge

import (
	"context"
	"crypto/x509"
	"time"

	"github.com/browser-agent/browser-agent/internal/wall"
	"github.com/browser-agent/browser-agent/policy"
)

// Defaults of the limits an Option can change.
const (
	DefaultNavigationTimeout = 15 * time.Second
	DefaultBodyCap           = 5 << 20 // bytes of one response body
	DefaultFrameCap          = 16      // sub-frame navigations per opened page
	DefaultChunkSize         = 8 << 10 // bytes of visible text per Read
	DefaultTextCap           = 1 << 20 // bytes of visible text kept per page
	DefaultLinkCap           = 500
	DefaultFieldCap          = 500
	DefaultSettle            = 150 * time.Millisecond
	DefaultSystemDriverDir   = "/usr/lib/browser-agent/driver"
)

// The Chromium binaries tried, in order, when neither WithChromium nor $BROWSER_AGENT_CHROMIUM
// names one.
const (
	// DefaultChromium is Debian's chromium-headless-shell: the same Chromium, built as the
	// headless shell Playwright itself uses for headless runs. It draws the same pages for about
	// two thirds of the full browser's CPU (BENCHMARKS.md, "The browser binary"). The binary
	// itself: the package's /usr/bin/chromium-headless-shell is a script that runs it without
	// exec, which would leave a shell between the driver and the browser.
	DefaultChromium = "/usr/lib/chromium/chromium-headless-shell"
	// FallbackChromium is Debian's full chromium, used when the headless shell is not installed.
	FallbackChromium = "/usr/bin/chromium"
)

// Environment variables read when the matching Option is not given.
const (
	EnvDriverDir = "BROWSER_AGENT_DRIVER_DIR"
	EnvChromium  = "BROWSER_AGENT_CHROMIUM"
)

// Option configures a Runtime or a Session.
type Option func(*config)

type proxyConfig struct {
	server, username, password string
}

type config struct {
	driverDir  string
	chromium   string
	logf       func(string, ...any)
	hook       func(RequestDecision)
	proxy      *proxyConfig
	roots      *x509.CertPool
	extraArgs  []string
	navTimeout time.Duration
	bodyCap    int64
	frameCap   int
	sessionTTL time.Duration
	wall       policy.WallMode          // for policies that do not say (wall.go)
	wallProbe  func() wall.Availability // tests: the machine as they need it; nil: wall.Probe
	chunkSize  int
	textCap    int
	settle     time.Duration
	pixels     bool // decide visibility by rendering (visibility.go)
	// withheldList makes every read list each withheld text node (WithheldRun): the debug
	// switch (WithWithheldList).
	withheldList bool
	pixelTime    time.Duration // bounds the pixel phase (maxPixelTime; tests shorten it)
	readAhead    bool          // WithReadAhead
	// nodes are elements, by frame and backend node id, whose own visible text a proof
	// (VisibleText) reports (WithNodeTexts).
	nodes map[string][]int
	// busyPhase (tests) runs at the start of each pixel phase, before it lays the page out: a
	// wait there is what the fixed costs of a long page's phase on a busy machine are
	// (phaseTime); its error ends the phase.
	busyPhase func(ctx context.Context) error
	// phaseGroups, when above 0, stops each pixel phase after that many groups of bands, as
	// one out of time stops (tests).
	phaseGroups int
	// remoteWait is how long a shot waits for an out-of-process frame's paint (remotePaintWait;
	// tests shorten it).
	remoteWait time.Duration
	// lateRemote (tests) skips, outside recheckRemote, the paint changes of out-of-process
	// frames: "all", or one mode ("off", "foreign", "on"), as if they reached the surface late.
	lateRemote string
	// lateFirst (tests): an out-of-process frame's text reaches the surface only after the first
	// shot of a two-frame proof (outside recheckRemote): its text paint is off for shot A, and
	// back on before the runs' paint is turned off for shot D.
	lateFirst bool
	// noSplit (tests) turns off the two-frame proof's split of overlapping runs: a pixel in two
	// runs' boxes is then no evidence at all, as before it.
	noSplit bool
	// oneA2 (tests) leaves out the third shot of A on a page with an out-of-process frame: a
	// pixel is then stable where A and A2 alone agree.
	oneA2 bool
	// noReach (tests) counts each run's ink as inside its boxes: another run's shadow or accents
	// reaching into a box are then evidence for it, as before the layout measured their reach.
	noReach bool
	// staleA2 (tests): the shot of A2 shows what A showed, as a frame's surface shown stale in
	// it (with lateFirst: the frame's text missing, as in A).
	staleA2 bool
	// staleD (tests): the first shot of D in a two-frame proof shows the out-of-process frames
	// without their text (a surface shown stale or blank in one shot), outside recheckRemote: a
	// shot taken before A with those frames' text paint off stands in for it.
	staleD bool
	// lagged (tests): an out-of-process frame's surface one state behind its paint, as the
	// suite saw it under load: shot A shows the frame's text that an earlier change had turned
	// off, both shots of the first D show it off, A2 shows it again (the text paint of those
	// frames turned off after A and back on after the first D).
	lagged bool
	// proveWhole (benchmarks) makes every read prove the whole page, as before a read proved
	// only the chunk it returns (Session.readOn).
	proveWhole bool
	// oneD (tests) counts the first D of a two-frame proof on a page with an out-of-process
	// frame alone, without the second D that confirms it: the positive control of lagged.
	oneD bool
	// skipTamper (tests) counts the shots of a proof during which the page changed itself: the
	// positive control of TestVisibilityTamper.
	skipTamper bool
	// fourFrames (benchmarks, tests) proves every read with the four-frame proof, never the
	// two-frame one (visibility.go).
	fourFrames bool
	// trustMovers (tests) makes the proof ignore what draws by itself (no box of it left out,
	// two frames whatever the page holds): the positive control of TestVisibilityMovers.
	trustMovers bool
	// beforeShots (tests) runs before each group of a pixel phase is shot, after its runs were
	// measured: a page laid out again there (a resize) moves them under the shots.
	beforeShots func(ctx context.Context) error
	// noMoveCheck (tests) counts a group's shots without measuring its runs again after them
	// (pixelJob.moved): the positive control of TestVisibilityMovedUnderShots.
	noMoveCheck bool
	// resolved (tests) runs in evalFrame between resolving the handles, in object group group,
	// and the evaluation.
	resolved func(ctx context.Context, sess CDPSession, group string)
	// phase (benchmarks) is told how long each phase of Open and of the reads took
	// (BenchmarkOpenPhases): "goto", "settle", "read" (the whole snapshot), "view", "quiet",
	// "pixels", "shot", "eval:<mode>" and "recheck". Called on the goroutine of the Open or
	// read; nil: nothing is timed.
	phase func(name string, d time.Duration)
}

// took tells cfg.phase how long the phase name took since start.
func (c *config) took(name string, start time.Time) {
	if c.phase != nil {
		c.phase(name, time.Since(start))
	}
}

func defaultConfig() config {
	return config{
		logf:       func(string, ...any) {},
		navTimeout: DefaultNavigationTimeout,
		bodyCap:    DefaultBodyCap,
		frameCap:   DefaultFrameCap,
		chunkSize:  DefaultChunkSize,
		textCap:    DefaultTextCap,
		settle:     DefaultSettle,
		pixels:     true,
		pixelTime:  maxPixelTime,
		remoteWait: remotePaintWait,
		readAhead:  true,
	}
}

// WithReadAhead says whether the session proves the next part of a long page while the model
// thinks, once a read has handed out all the text proven so far (ahead.go; on by default). What it
// proved is served only when the page made no change since.
func WithReadAhead(on bool) Option { return func(c *config) { c.readAhead = on } }

// WithDriverDir sets the Playwright driver directory (the one holding package/ and node). Without
// it the bridge tries $BROWSER_AGENT_DRIVER_DIR, then driver/ in the current directory, the
// executable's directory and their parents, then /usr/lib/browser-agent/driver.
func WithDriverDir(dir string) Option { return func(c *config) { c.driverDir = dir } }

// WithChromium sets the Chromium binary. Without it the bridge uses $BROWSER_AGENT_CHROMIUM, then
// DefaultChromium, then FallbackChromium.
func WithChromium(path string) Option { return func(c *config) { c.chromium = path } }

// WithLogf sets the function diagnostic lines go to. Lines never carry page text or bodies.
func WithLogf(f func(format string, args ...any)) Option {
	return func(c *config) {
		if f != nil {
			c.logf = f
		}
	}
}

// WithDecisionHook sets a function called once for every request decision the session takes
// (navigations, redirect hops, subresources, WebSockets, popups). It is called from the
// browser's goroutines and must not block.
func WithDecisionHook(f func(RequestDecision)) Option { return func(c *config) { c.hook = f } }

// WithProxy sends the browser's launch and the bridge's own fetches through an HTTP proxy.
// Without it the browser is launched against a refusing proxy of the bridge's own, so that any
// request that escapes the route goes nowhere.
func WithProxy(server, username, password string) Option {
	return func(c *config) {
		if server == "" {
			c.proxy = nil
			return
		}
		c.proxy = &proxyConfig{server: server, username: username, password: password}
	}
}

// WithProxyRoots sets the only certificate authorities the bridge's own https fetches trust: with
// an intercepting egress proxy, the proxy's per-run authority (proxy.Proxy.RootCAs), and nothing
// else. Without it the fetcher verifies against the system roots.
func WithProxyRoots(pool *x509.CertPool) Option { return func(c *config) { c.roots = pool } }

// WithWithheldList makes every read list each text node it withheld, with its reason, the
// reader's detail, its characters, its parent's tag and its box (Page.WithheldRuns,
// Chunk.WithheldRuns), so that a person can see why text was not read. Off by default: the
// list costs a box per node. It never holds the withheld text.
func WithWithheldList(on bool) Option { return func(c *config) { c.withheldList = on } }

// WithExtraArgs appends Chromium command-line switches to the launch.
func WithExtraArgs(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

// WithNavigationTimeout bounds one Open (every hop and the browser's load) and one request's
// fetch. Default 15 s.
func WithNavigationTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.navTimeout = d
		}
	}
}

// WithBodyCap bounds the bytes read of one response body; longer bodies are cut and the page is
// flagged Truncated. Default 5 MiB.
func WithBodyCap(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.bodyCap = n
		}
	}
}

// WithFrameCap bounds the sub-frame navigations allowed per opened page. Default 16.
func WithFrameCap(n int) Option {
	return func(c *config) {
		if n >= 0 {
			c.frameCap = n
		}
	}
}

// WithSessionTimeout stops the session's browser d after launch; every later call returns
// ErrSessionExpired. Zero (the default) means no deadline.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTTL = d } }

// WithChunkSize sets the bytes of visible text returned per Read. Default 8 KiB.
func WithChunkSize(n int) Option {
	return func(c *config) {
		if n >= 256 {
			c.chunkSize = n
		}
	}
}

// WithSettle sets the longest Open waits after the page's load event, for the requests the page
// makes late, before it checks the page for credential fields and reads it. Open reads earlier
// once no request has been in the bridge's route for 30 ms (so a quiet page is read 30 ms after
// load). Default 150 ms; 0 reads at once.
func WithSettle(d time.Duration) Option {
	return func(c *config) {
		if d >= 0 {
			c.settle = d
		}
	}
}
