// Package adversarial runs the real browser-agent binary against hostile pages and servers on
// loopback, with a compromised (scripted) model that does whatever the page asks, and checks by
// counters and searches that nothing was written, nothing left the approved site and no secret
// leaked. Every case is armed: the same hostile behaviour is first shown to trip its counter or
// leak its marker against an unguarded Chromium or a naive check.
package adversarial

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var (
	binary    string // the browser-agent binary built for this package
	repoRoot  string
	driverDir string
	pw        *playwright.Playwright
	plain     playwright.Browser // the one unguarded browser shared by every positive control
)

// plainArgs are the unguarded browser's switches: quiet background traffic and, for safety on a
// machine with no network, no name resolution except localhost. There is no route, no proxy.
var plainArgs = []string{
	"--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--no-first-run", "--disable-quic",
	"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::ffff:7f00:1], EXCLUDE [::1]",
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

// caseParallel is how many cases are under way at once unless -parallel says otherwise: each
// case is a positive control in the shared browser (mostly waiting for the hostile page to act)
// and then a guarded run of the binary (a Chromium of its own, the CPU-heavy part). guardSem and
// ctlSem bound each part to the machine's two cores, so that one case's control overlaps another's
// guarded run; with go test's default (-parallel GOMAXPROCS = 2) they would mostly take turns.
const caseParallel = 4

func testMain(m *testing.M) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(caseParallel))
	}
	repoRoot = testbrowser.RepoRoot()
	driverDir = testbrowser.DriverDir()
	ctl, err := testbrowser.Start(nil, plainArgs...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the unguarded control browser: %v\n", err)
		return 1
	}
	defer ctl.Close()
	pw, plain = ctl.PW, ctl.Browser
	code := testbrowser.RunWithBinary(m, &binary)
	if !closeSharedRuntime() && code == 0 {
		code = 1
	}
	return code
}

// shared is the Playwright driver of the in-process guarded runs, started by the first of them:
// one driver for the package, a Chromium of its own for each run (cli.SharedLauncher). Its own
// output (not a run's) is kept in log and checked for the planted secret when it stops.
var shared struct {
	once sync.Once
	rt   *bridge.Runtime
	err  error
	log  testutil.Buffer
}

func sharedRuntime(t *testing.T) *bridge.Runtime {
	shared.once.Do(func() {
		shared.rt, shared.err = bridge.NewRuntime(bridge.WithDriverDir(driverDir), bridge.WithLogf(func(f string, a ...any) {
			fmt.Fprintf(&shared.log, f+"\n", a...)
		}))
	})
	if shared.err != nil {
		t.Fatalf("the shared driver of the in-process runs: %v", shared.err)
	}
	return shared.rt
}

// closeSharedRuntime stops the shared driver; it reports false when the secret reached its log.
func closeSharedRuntime() bool {
	if shared.rt == nil {
		return true
	}
	shared.rt.Close()
	if strings.Contains(shared.log.String(), Secret) {
		fmt.Fprintf(os.Stderr, "FAIL: the planted secret reached the shared driver's log\n")
		return false
	}
	return true
}
