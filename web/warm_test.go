package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

// guardedLaunch launches the agent's Chromium behind its own egress proxy on the package's driver,
// as serve does.
func guardedLaunch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	g, err := guarded.LaunchOn(ctx, agentRT, pol, nil)
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}

// launches counts the browsers a Launcher started, which runs opened pages in each, and which
// were closed.
type launches struct {
	launch coordinator.Launcher
	mu     sync.Mutex
	n      int
	opened map[int]int // browser → Open calls
	closed map[int]int // browser → Close calls
}

func newLaunches(l coordinator.Launcher) *launches {
	return &launches{launch: l, opened: map[int]int{}, closed: map[int]int{}}
}

func (l *launches) Launch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	b, c, err := l.launch(ctx, pol)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	cb := &countedBrowser{Browser: b, l: l, i: l.n}
	return cb, closerFunc(func() error {
		l.mu.Lock()
		l.closed[cb.i]++
		l.mu.Unlock()
		return c.Close()
	}), nil
}

type countedBrowser struct {
	coordinator.Browser
	l *launches
	i int
}

func (b *countedBrowser) Open(ctx context.Context, url string) (bridge.Page, error) {
	b.l.mu.Lock()
	b.l.opened[b.i]++
	b.l.mu.Unlock()
	return b.Browser.Open(ctx, url)
}

// Screenshot keeps the live view of the wrapped browser.
func (b *countedBrowser) Screenshot(ctx context.Context) ([]byte, error) {
	if s, ok := b.Browser.(runner.Screenshotter); ok {
		return s.Screenshot(ctx)
	}
	return nil, bridge.ErrNoPage
}

// TestWarmPool: with the pool, a run takes a browser started before it (the phase says so), the
// next one starts at once, and no browser serves two runs: each launch (its own Chromium, profile
// and egress proxy) is opened by one run and closed after it.
func TestWarmPool(t *testing.T) {
	l := newLaunches(guardedLaunch)
	_, ts := newServer(t, WithLauncher(l.Launch), WithPrewarm(true), WithLimits(Limits{PerVisitor: 50}))
	if !testutil.Eventually(60*time.Second, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.n == 1 }) {
		t.Fatal("the pool did not start a browser before any run")
	}
	for i := range 3 {
		c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
		res := waitResult(t, ts.URL, c.ID)
		if res.Status != coordinator.StatusAnswered {
			t.Fatalf("run %d: %s (%s)", i+1, res.Status, res.Reason)
		}
		var run RunJSON
		do(t, "GET", ts.URL+c.URL, "", nil).json(t, &run)
		var phases []string
		for _, p := range run.Phases {
			phases = append(phases, p.Phase)
		}
		if len(phases) != 3 || phases[0] != runner.PhaseStarting || (phases[1] != runner.PhaseWarm && phases[1] != runner.PhaseWaiting) || phases[2] != runner.PhaseReady {
			t.Errorf("run %d phases: got %q, want starting, warm (or waiting), ready", i+1, phases)
		}
		if i == 0 && phases[1] != runner.PhaseWarm {
			t.Errorf("the first run did not take the browser started in advance: %q", phases)
		}
	}
	if !testutil.Eventually(60*time.Second, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.n == 4 }) {
		t.Errorf("after three runs: %d browsers started, want 4 (one waiting)", l.n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 1; i <= 3; i++ {
		if l.opened[i] == 0 || l.closed[i] != 1 {
			t.Errorf("browser %d: opened %d times, closed %d; want used by one run and closed once", i, l.opened[i], l.closed[i])
		}
	}
	if l.opened[4] != 0 || l.closed[4] != 0 {
		t.Errorf("the waiting browser: opened %d, closed %d; want untouched", l.opened[4], l.closed[4])
	}
}

// agentBrowsers counts the agent's Chromium processes (of any run, in this process's tree): those
// started with a bridge profile. The UI browser that drives the page is not one of them.
func agentBrowsers() int { return descendants("browser-agent-profile-") }

// descendants counts this process's descendant processes whose command line contains name.
func descendants(name string) int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), name) {
			continue
		}
		for p, i := pid, 0; p > 1 && i < 64; i++ {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			if err != nil {
				break
			}
			f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
			if len(f) < 2 {
				break
			}
			p, _ = strconv.Atoi(f[1])
			if p == self {
				n++
				break
			}
		}
	}
	return n
}

// TestLoad: 30 visitors start runs at once against serve's real browser (guarded Chromium behind
// its egress proxy, the warm pool on). Exactly one runs live at a time; every other request is a
// recorded run labelled busy (or the visitor limit); afterwards no goroutine, browser or proxy is
// left behind.
func TestLoad(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	goBefore := runtime.NumGoroutine()
	chromeBefore := agentBrowsers()
	l := newLaunches(guardedLaunch)
	s, err := New(testPol, withDemo(), WithLauncher(l.Launch), WithModel("offline", offlineModel), WithLedger(newLedger()),
		WithPrewarm(true), WithTrustedProxies(loopback), WithPlayback(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	rs := burst(t, ts.URL, `{"preset":"lookup"}`, 30, func(i int) map[string]string { return xff(fmt.Sprintf("198.51.100.%d", i+1)) })
	live, recorded := liveAndBusy(t, rs)
	if len(live) != 1 || recorded != 29 {
		t.Fatalf("30 visitors at once: %d live, %d recorded busy; want 1 and 29", len(live), recorded)
	}
	// While it runs, at most one browser serves a run (the other is the next one, waiting).
	var h HealthJSON
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if h.Running > 1 {
		t.Errorf("health during the load: %d running", h.Running)
	}
	for _, c := range live {
		if res := waitResult(t, ts.URL, c.ID); res.Status != coordinator.StatusAnswered {
			t.Errorf("the live run: %s (%s)", res.Status, res.Reason)
		}
	}
	for i, r := range rs {
		var c CreatedJSON
		r.json(t, &c)
		if c.Recorded != nil {
			waitResult(t, ts.URL, c.ID)
		}
		_ = i
	}
	// The pool has the next browser ready when the server stops: Close must stop it too.
	if !testutil.Eventually(60*time.Second, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.n >= 2 }) {
		t.Errorf("the pool did not start the next browser")
	}
	s.Close()
	ts.Close()
	http.DefaultClient.CloseIdleConnections()
	l.mu.Lock()
	started := l.n
	closedAll := true
	for i := 1; i <= l.n; i++ {
		if l.closed[i] > 1 {
			t.Errorf("browser %d closed %d times", i, l.closed[i])
		}
		if l.opened[i] > 0 && l.closed[i] != 1 {
			closedAll = false
		}
	}
	l.mu.Unlock()
	if !closedAll {
		t.Errorf("a browser that served a run was not closed")
	}
	if started > 3 {
		t.Errorf("%d browsers started for one live run, want at most 3 (the run's, the next, maybe one more)", started)
	}
	if !testutil.Eventually(30*time.Second, func() bool { return agentBrowsers() <= chromeBefore }) {
		t.Errorf("the agent's Chromium processes: %d before, %d after", chromeBefore, agentBrowsers())
	}
	if !testutil.Eventually(30*time.Second, func() bool { return runtime.NumGoroutine() <= goBefore+2 }) {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines: %d before, %d after\n%s", goBefore, runtime.NumGoroutine(), buf[:n])
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
