// Package adversarial runs the real browser-agent binary against hostile pages and servers on
// loopback, with a compromised (scripted) model that does whatever the page asks, and checks by
// counters and searches that nothing was written, nothing left the approved site and no secret
// leaked. Every case is armed: the same hostile behaviour is first shown to trip its counter or
// leak its marker against an unguarded Chromium or a naive check.
package adversarial

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mxschmitt/playwright-go"
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

func testMain(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	driverDir = filepath.Join(repoRoot, "driver")
	dir, err := os.MkdirTemp("", "browser-agent-adversarial")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "browser-agent")
	build := exec.Command("go", "build", "-o", binary, "./cmd/browser-agent")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: building browser-agent:", err)
		return 1
	}
	pw, err = playwright.Run(&playwright.RunOptions{DriverDirectory: driverDir, SkipInstallBrowsers: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the adversarial suite needs the Playwright driver in %s (run scripts/setup): %v\n", driverDir, err)
		return 1
	}
	defer pw.Stop()
	plain, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String("/usr/bin/chromium"),
		Headless:       playwright.Bool(true),
		Args:           plainArgs,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: unguarded control browser: %v (run scripts/setup)\n", err)
		return 1
	}
	defer plain.Close()
	return m.Run()
}
