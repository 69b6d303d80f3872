package web

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/policy"
)

// One demo site, one bridge runtime (the agent's guarded Chromium, one per run) and one
// Playwright driver with a plain Chromium that drives the page, per package.
var (
	site    *demosite.Server
	testPol *policy.Policy
	agentRT *bridge.Runtime
	pw      *playwright.Playwright
	ui      playwright.Browser
	repo    string // the repository root
)

// chromiumArgs are the switches of the browser that drives the page under test.
var chromiumArgs = []string{
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--no-first-run", "--disable-quic",
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	var err error
	repo = testbrowser.RepoRoot()
	site, err = demosite.Start(context.Background(), "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: demo site:", err)
		return 1
	}
	defer site.Close()
	if testPol, err = policy.Parse(demosite.PolicyYAML(site.URL), "demo-site policy"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: policy:", err)
		return 1
	}
	// Never skip: a machine without Chromium or the driver fails the package, as the bridge's does.
	if agentRT, err = bridge.NewRuntime(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the web tests drive a real Chromium: %v\n", err)
		return 1
	}
	defer agentRT.Close()
	drv, err := testbrowser.Start(io.Discard, chromiumArgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer drv.Close()
	pw, ui = drv.PW, drv.Browser
	return m.Run()
}

// realLaunch launches the agent's guarded Chromium through the bridge.
func realLaunch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	s, err := agentRT.Launch(ctx, pol)
	if err != nil {
		return nil, nil, err
	}
	return s, s, nil
}

// httpLaunch launches the HTTP fake browser: fast, no screenshots.
func httpLaunch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	b := browsertest.NewHTTP(pol)
	return b, b, nil
}

// gate holds every run's first Open until it is opened; started receives once per Open.
type gate struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) launch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	b := browsertest.NewHTTP(pol)
	return gatedBrowser{HTTP: b, g: g}, b, nil
}

type gatedBrowser struct {
	*browsertest.HTTP
	g *gate
}

func (b gatedBrowser) Open(ctx context.Context, url string) (bridge.Page, error) {
	b.g.started <- struct{}{}
	select {
	case <-b.g.release:
	case <-ctx.Done():
		return bridge.Page{}, ctx.Err()
	}
	return b.HTTP.Open(ctx, url)
}

// memLedger is a spend ledger in memory; its errors are settable.
type memLedger struct {
	mu       sync.Mutex
	spend    map[string]float64
	readErr  error
	writeErr error
	adds     int
}

func newLedger() *memLedger { return &memLedger{spend: map[string]float64{}} }

func (l *memLedger) SpendOn(ctx context.Context, day string) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readErr != nil {
		return 0, l.readErr
	}
	return l.spend[day], nil
}

func (l *memLedger) AddSpend(ctx context.Context, day string, usd float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writeErr != nil {
		return l.writeErr
	}
	l.adds++
	l.spend[day] += usd
	return nil
}

func (l *memLedger) set(f func(*memLedger)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

func (l *memLedger) on(day string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spend[day]
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// offlineModel is the offline planner for WithModel.
func offlineModel() (coordinator.Model, error) { return offline.New(), nil }

// withDemo gives a Server the demo's presets and field order, as serve does.
func withDemo() Option {
	return func(s *Server) {
		WithPresets(presets.All()...)(s)
		WithFieldOrder(presets.FieldOrder...)(s)
		WithRecordings(presets.Recorded())(s)
	}
}

// newServer starts a Server with the HTTP fake browser, the offline planner and an empty ledger,
// then opts, behind an httptest server. Both stop with the test.
func newServer(t *testing.T, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	return newServerOn(t, testPol, opts...)
}

// newServerOn is newServer with the policy pol.
func newServerOn(t *testing.T, pol *policy.Policy, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	base := []Option{withDemo(), WithLauncher(httpLaunch), WithModel("offline", offlineModel), WithLedger(newLedger())}
	s, err := New(pol, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() }) // runs first: streams end, so ts.Close does not wait on them
	return s, ts
}

// outDir is tests/out at the repository root, where screenshots are kept as CI artifacts, or
// $BROWSER_AGENT_SHOTS when set.
func outDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repo, "tests", "out")
	if d := os.Getenv("BROWSER_AGENT_SHOTS"); d != "" {
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
