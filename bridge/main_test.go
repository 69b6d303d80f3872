package bridge

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/mxschmitt/playwright-go"
)

// One driver, one fixture and one unguarded browser (for positive controls) per package. Each
// test launches its own guarded session: a session is a dedicated Chromium by design.
var (
	testRT   *Runtime
	testFix  *fixture
	plain    playwright.Browser
	verbose  = os.Getenv("BRIDGE_TEST_LOG") != ""
	logMu    sync.Mutex
	testLogf = func(format string, args ...any) {
		if verbose {
			logMu.Lock()
			fmt.Fprintf(os.Stderr, format+"\n", args...)
			logMu.Unlock()
		}
	}
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	testRT, err = NewRuntime(WithLogf(testLogf))
	if err != nil {
		// Never skip: a machine without Chromium or the driver fails the package.
		fmt.Fprintf(os.Stderr, "FAIL: the bridge tests drive a real Chromium and need the Playwright driver: %v\n", err)
		fmt.Fprintln(os.Stderr, "FAIL: run scripts/setup (or make setup) first")
		return 1
	}
	defer testRT.Close()
	if testFix, err = newFixture(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: fixture: %v\n", err)
		return 1
	}
	defer testFix.Close()
	plain, err = testRT.pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath:  playwright.String(testRT.cfg.chromium),
		Headless:        playwright.Bool(true),
		ChromiumSandbox: playwright.Bool(os.Geteuid() != 0),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: unguarded control browser: %v: run scripts/setup (or make setup)\n", err)
		return 1
	}
	defer plain.Close()
	return m.Run()
}

// newSession launches a guarded session for the fixture's policy; it is closed with the test.
func newSession(t testing.TB, opts ...Option) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := testRT.Launch(ctx, testFix.pol, opts...)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	// A fulfilled document has no server address, so Chromium's Local Network Access checks treat
	// it as public and block its WebSockets to loopback, where the fixtures live. Those checks do
	// not apply to a public site reaching a public host; grant the permission so that the tests
	// measure the bridge's guards and not this artefact of loopback fixtures.
	if err := s.bctx.GrantPermissions([]string{"local-network-access"}); err != nil {
		t.Fatalf("grant local-network-access: %v", err)
	}
	return s
}

// plainVisit loads each url in turn in an unguarded browser context (no route, no init script,
// service workers allowed): the positive control that shows a fixture really reaches its target.
func plainVisit(t testing.TB, urls ...string) {
	t.Helper()
	plainVisitUntil(t, nil, urls...)
}

// plainVisitUntil is plainVisit that, after the last page, keeps the context open until done
// reports true (at most 10 s), so that a slow positive control on a loaded machine still fires
// before its page is closed. A nil done waits only the usual settle.
func plainVisitUntil(t testing.TB, done func() bool, urls ...string) {
	t.Helper()
	bctx, err := plain.NewContext()
	if err != nil {
		t.Errorf("plain context: %v", err)
		return
	}
	defer bctx.Close()
	page, err := bctx.NewPage()
	if err != nil {
		t.Errorf("plain page: %v", err)
		return
	}
	for _, url := range urls {
		if _, err := page.Goto(url, playwright.PageGotoOptions{Timeout: playwright.Float(15000)}); err != nil {
			t.Logf("plain goto %s: %v (the control may still have fired)", url, err)
		}
		settle()
	}
	if done != nil {
		testutil.Eventually(10*time.Second, done)
	}
}

// plainPage opens a page in a new context of the unguarded Chromium, closed when t ends.
func plainPage(t testing.TB) playwright.Page {
	t.Helper()
	bctx, err := plain.NewContext()
	if err != nil {
		t.Fatalf("plain context: %v", err)
	}
	t.Cleanup(func() { _ = bctx.Close() })
	page, err := bctx.NewPage()
	if err != nil {
		t.Fatalf("plain page: %v", err)
	}
	return page
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
