// Package testbrowser is the scaffolding shared by the tests that drive a real Chromium or the
// real browser-agent binary: where the Playwright driver and Chromium are (the bridge's own
// lookup), one driver and one unguarded Chromium per package for the positive controls, a page
// in a browser of its own for a test, and the binary built once.
//
// It sits beside the test packages, above the bridge (whose lookup it reuses); the bridge's own
// tests cannot import it and start their Runtime themselves. Nothing here skips: a machine
// without Chromium or the driver fails the package and says to run scripts/setup.
package testbrowser

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/bridge"
)

// RepoRoot is the repository's root directory (the one holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// DriverDir is the Playwright driver directory the bridge would use ($BROWSER_AGENT_DRIVER_DIR,
// then driver/ above the working directory), else the repository's driver/: playwright.Run then
// fails and says where it looked.
func DriverDir() string {
	if d, err := bridge.DriverDir(); err == nil {
		return d
	}
	return filepath.Join(RepoRoot(), "driver")
}

// Chromium is the Chromium binary the bridge would use ($BROWSER_AGENT_CHROMIUM, else
// bridge.DefaultChromium, else bridge.FallbackChromium); a launch of a missing one fails and says so.
func Chromium() string {
	if c, err := bridge.ChromiumPath(); err == nil {
		return c
	}
	return bridge.DefaultChromium
}

// FullChromium is Debian's full chromium (bridge.FallbackChromium), for the tests of what only the
// full browser has: extensions (the side panel), and its own background traffic. scripts/setup
// installs it beside the headless shell; a launch of a missing one fails and says so.
func FullChromium() string { return bridge.FallbackChromium }

// Run starts the Playwright driver without installing anything. Its own output goes to out
// (os.Stderr when nil).
func Run(out io.Writer) (*playwright.Playwright, error) {
	if out == nil {
		out = os.Stderr
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: DriverDir(), SkipInstallBrowsers: true, Stdout: out, Stderr: os.Stderr})
	if err != nil {
		return nil, fmt.Errorf("the Playwright driver in %s: %w (run scripts/setup)", DriverDir(), err)
	}
	return pw, nil
}

// Options completes opts for a headless launch of Chromium(): the executable (unless opts names
// one), headless, and the sandbox unless running as root (where Playwright adds --no-sandbox).
func Options(opts playwright.BrowserTypeLaunchOptions) playwright.BrowserTypeLaunchOptions {
	if opts.ExecutablePath == nil {
		opts.ExecutablePath = playwright.String(Chromium())
	}
	opts.Headless = playwright.Bool(true)
	if opts.ChromiumSandbox == nil {
		opts.ChromiumSandbox = playwright.Bool(os.Geteuid() != 0)
	}
	return opts
}

// Launch launches Chromium with opts completed by Options.
func Launch(pw *playwright.Playwright, opts playwright.BrowserTypeLaunchOptions) (playwright.Browser, error) {
	b, err := pw.Chromium.Launch(Options(opts))
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w (run scripts/setup)", *Options(opts).ExecutablePath, err)
	}
	return b, nil
}

// Package is a package's driver and one unguarded Chromium, started by its TestMain.
type Package struct {
	PW      *playwright.Playwright
	Browser playwright.Browser
}

// Start starts the driver (its output to out, os.Stderr when nil) and one Chromium with the
// extra switches args. The caller closes it when m.Run returns.
func Start(out io.Writer, args ...string) (*Package, error) {
	pw, err := Run(out)
	if err != nil {
		return nil, err
	}
	b, err := Launch(pw, playwright.BrowserTypeLaunchOptions{Args: slices.Clone(args)})
	if err != nil {
		pw.Stop()
		return nil, err
	}
	return &Package{PW: pw, Browser: b}, nil
}

// Close closes the browser and stops the driver.
func (p *Package) Close() error {
	return errors.Join(p.Browser.Close(), p.PW.Stop())
}

// Page launches a Chromium of its own with opts (completed by Options), closed when the test
// ends, and opens a page in a new context made with ctxOpts. The context is granted
// local-network-access: a page served from loopback is otherwise blocked by Chromium's own
// Local Network Access checks from some loopback requests, and a positive control would not show
// what the guard under test stops.
func Page(t testing.TB, pw *playwright.Playwright, opts playwright.BrowserTypeLaunchOptions, ctxOpts playwright.BrowserNewContextOptions) playwright.Page {
	t.Helper()
	b, err := Launch(pw, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	bctx, err := b.NewContext(ctxOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := bctx.GrantPermissions([]string{"local-network-access"}); err != nil {
		t.Fatalf("grant local-network-access: %v", err)
	}
	page, err := bctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// Shared is a driver started on first use by any test of a package and stopped by Stop (from
// TestMain, or a deferred call): the tests of a package share one driver instead of starting
// their own.
type Shared struct {
	once sync.Once
	pw   *playwright.Playwright
	err  error
}

// Get returns the driver, starting it on first use; an error fails t.
func (s *Shared) Get(t testing.TB) *playwright.Playwright {
	t.Helper()
	s.once.Do(func() { s.pw, s.err = Run(nil) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.pw
}

// Stop stops the driver if it was started.
func (s *Shared) Stop() {
	if s.pw != nil {
		s.pw.Stop()
	}
}

// EnvBinary names a browser-agent binary already built for this tree: make test builds it once
// and every package that runs the real binary uses it instead of building its own.
const EnvBinary = "BROWSER_AGENT_TEST_BINARY"

// Binary returns the browser-agent binary for a package's TestMain: $BROWSER_AGENT_TEST_BINARY
// when set, else one built from this tree into a temporary directory. done removes what Binary
// made.
func Binary() (path string, done func(), err error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", nil, fmt.Errorf("$%s: %w", EnvBinary, err)
		}
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "browser-agent-test")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "browser-agent")
	build := exec.Command("go", "build", "-o", path, "./cmd/browser-agent")
	build.Dir = RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building browser-agent: %w", err)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// RunWithBinary is the body of a TestMain for a package that runs the real binary: it sets *bin
// to Binary's path, runs the tests and removes what Binary made. It returns the exit code.
func RunWithBinary(m *testing.M, bin *string) int {
	path, done, err := Binary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer done()
	*bin = path
	return m.Run()
}

// Process starts Chromium itself (not through the driver), headless, on a fresh profile, with
// args and then url, for a test that needs the browser's own DevTools port. It returns the
// profile directory. At the test's end the whole process group is killed and the profile
// removed: the browser's children (renderers, the GPU and network services) outlive a kill of
// the browser alone and go on writing into the profile, which failed t.TempDir's cleanup.
func Process(t testing.TB, url string, args ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "testbrowser-profile-")
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--headless", "--user-data-dir=" + dir, "--no-first-run"}, args...)
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium as root runs only without its sandbox
	}
	cmd := exec.Command(Chromium(), append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		// A killed child may finish the write it was in; the removal is tried again briefly.
		for i := 0; ; i++ {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if i == 50 {
				t.Errorf("remove the profile: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}
