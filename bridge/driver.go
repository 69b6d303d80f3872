package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/internal/procs"
	"github.com/browser-agent/browser-agent/internal/wall"
)

//go:embed js/cli.js
var cliLauncher string

// runMu serializes the driver starts of this process: startDriver sets PLAYWRIGHT_CLI_PATH for
// the length of one playwright.Run.
var runMu sync.Mutex

// startDriver starts the Playwright driver of dir with playwright.Run, through a launcher that
// answers playwright-go's version check without loading Playwright (js/cli.js): every driver
// start (a run, an MCP session, the live demo's server, a test) is 0.6 s shorter, more on a
// busy machine. The version itself was checked before (checkDriverDir). Without a place to keep
// the launcher, or when the operator set PLAYWRIGHT_CLI_PATH, the driver starts as
// playwright-go starts it. Another playwright.Run of this process that reads the variable
// meanwhile starts through the same launcher, which does what cli.js does.
func startDriver(dir string, opts *playwright.RunOptions, logf func(string, ...any)) (*playwright.Playwright, error) {
	runMu.Lock()
	defer runMu.Unlock()
	return startDriverLocked(dir, opts, logf)
}

func startDriverLocked(dir string, opts *playwright.RunOptions, logf func(string, ...any)) (*playwright.Playwright, error) {
	if os.Getenv("PLAYWRIGHT_CLI_PATH") == "" {
		launcher, err := writeLauncher(filepath.Join(dir, "package", "cli.js"))
		if err != nil {
			logf("bridge: driver launcher: %v (starting the driver without it)", err)
		} else {
			os.Setenv("PLAYWRIGHT_CLI_PATH", launcher)
			defer os.Unsetenv("PLAYWRIGHT_CLI_PATH")
		}
	}
	return playwright.Run(opts)
}

// writeLauncher writes js/cli.js for cli into the user's cache directory, once per cli path and
// launcher text (the file name holds a hash of both), and returns its path. It lives in the
// user's own cache directory (browser-agent/ created 0700, the file 0600 and renamed into
// place whole), and a file found there is used only if it holds exactly what this would write.
func writeLauncher(cli string) (string, error) {
	q, err := json.Marshal(cli)
	if err != nil {
		return "", err
	}
	text := []byte(strings.Replace(cliLauncher, "/*CLI*/''", string(q), 1))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "browser-agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	path := filepath.Join(dir, "driver-cli-"+hex.EncodeToString(sum[:8])+".js")
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, text) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, "driver-cli-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(text)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", tmp.Name(), errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// startDriverContext is startDriver bounded by ctx, which has a deadline. playwright.Run takes no
// context and waits for node for ever (a node that hangs, or a driver that never answers), so
// when ctx ends first the processes this start made (children of this process that were not
// there before it, and their descendants) are killed, which ends playwright.Run, and the error
// says what did not answer, or is ctx's cause when ctx was canceled. It waits a moment for
// playwright.Run to end; a driver that answered meanwhile is stopped.
func startDriverContext(ctx context.Context, dir string, opts *playwright.RunOptions, logf func(string, ...any)) (*playwright.Playwright, error) {
	deadline, _ := ctx.Deadline()
	bound := time.Until(deadline).Round(time.Second)
	type started struct {
		pw  *playwright.Playwright
		err error
	}
	done := make(chan started, 1)
	before := make(chan map[int]bool, 1)
	go func() {
		runMu.Lock()
		defer runMu.Unlock()
		before <- children(os.Getpid()) // starts are serialized: a new child is this start's
		pw, err := startDriverLocked(dir, opts, logf)
		done <- started{pw, err}
	}()
	select {
	case d := <-done:
		return d.pw, d.err
	case <-ctx.Done():
	}
	select {
	case old := <-before:
		killNewChildren(old)
	default: // another start holds runMu: this one has started nothing yet
	}
	stopped := make(chan struct{})
	go func() { // the start ends once its processes are gone
		if d := <-done; d.pw != nil {
			_ = d.pw.Stop()
		}
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Second):
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &SetupError{What: "playwright driver", Problem: fmt.Sprintf("did not answer within %s", bound), Looked: []string{dir},
			Fix: "check that its node runs here, run scripts/setup again; see browser-agent doctor"}
	}
	return nil, context.Cause(ctx)
}

// children returns the pids of the live child processes of pid.
func children(pid int) map[int]bool {
	out := map[int]bool{}
	for p, pp := range procs.Parents() {
		if pp == pid {
			out[p] = true
		}
	}
	return out
}

// killNewChildren kills, with SIGKILL, the children of this process not in old and all their
// descendants.
func killNewChildren(old map[int]bool) {
	roots := map[int]bool{}
	for p := range children(os.Getpid()) {
		if !old[p] {
			roots[p] = true
		}
	}
	killTree(roots)
}

// killTree kills, with SIGKILL, the processes roots and all their descendants, found at once
// before any is killed (a killed parent's children would be adopted by another).
func killTree(roots map[int]bool) {
	pp := procs.Parents()
	kill := maps.Clone(roots)
	for grew := true; grew; {
		grew = false
		for p, parent := range pp {
			if kill[parent] && !kill[p] {
				kill[p], grew = true, true
			}
		}
	}
	for p := range kill {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// Kill stops the driver at once: its process and every process it started (Chromium included)
// are killed with SIGKILL, then the Runtime is closed. Stopping it gracefully (Close) lets the
// driver wait up to 30 s for a Chromium that does not answer; Kill is for when nothing it runs
// is needed any more (a signal during a launch).
func (rt *Runtime) Kill() error {
	if pid := rt.pw.Pid(); pid > 0 {
		killTree(map[int]bool{pid: true})
	}
	_ = rt.Close() // the driver is gone: its wait reports the kill
	return nil
}

// chromiumError is the error of a Chromium launch that failed: one line naming the binary, whether
// it exited or did not answer within bound, and the fix. The launch's own message (command line,
// browser logs) stays in Err for the debug log, not in the message.
func chromiumError(ctx context.Context, path string, bound time.Duration, err error) error {
	if ctx.Err() == context.Canceled {
		return fmt.Errorf("launch chromium: %w", context.Cause(ctx))
	}
	problem := "exited at launch"
	if ctx.Err() == context.DeadlineExceeded || strings.Contains(err.Error(), "Timeout ") {
		problem = fmt.Sprintf("did not answer within %s", bound.Round(time.Second))
	}
	if why := launchExit(err.Error()); why != "" {
		problem += " (" + why + ")"
	}
	return &launchError{SetupError{What: "chromium", Problem: problem, Looked: []string{path},
		Fix: "check that it runs here or set " + EnvChromium + "; see browser-agent doctor"}, err}
}

// launchStderrLines is how many of Chromium's last stderr lines a launch failure quotes.
const launchStderrLines = 3

// launchExit is what Playwright's launch message says of how the browser ended: its exit code or
// signal ("<process did exit: exitCode=1, signal=null>") and its last stderr lines ("[pid=N][err]
// ..."), joined for the one-line error, or "" when the message holds neither. A launch that fails
// under load is then diagnosable from the error alone (issue 38: "exited at launch" said nothing).
func launchExit(msg string) string {
	msg = ansiEscape.ReplaceAllString(msg, "")
	var parts []string
	// Behind the wall, Playwright started the wall's launcher, which says how Chromium ended on its
	// stderr: the launcher itself may be killed by Playwright when Chromium's pipe closes, and then
	// the process exit below is the launcher's SIGKILL, not Chromium's status.
	if m := wallExit.FindStringSubmatch(msg); m != nil {
		parts = append(parts, m[1])
	} else if m := processExit.FindStringSubmatch(msg); m != nil {
		switch {
		case m[2] != "" && m[2] != "null":
			parts = append(parts, "signal "+m[2])
		case m[1] != "" && m[1] != "null":
			parts = append(parts, "exit code "+m[1])
		}
	}
	// The browser logs come twice (the Browser logs section and the call log): keep each line once,
	// in order, and the last few.
	var lines []string
	seen := map[string]bool{}
	for _, m := range stderrLine.FindAllStringSubmatch(msg, -1) {
		l := strings.TrimSpace(m[1])
		if l == "" || seen[l] || strings.HasPrefix(l, wall.ExitLinePrefix) {
			continue
		}
		seen[l] = true
		lines = append(lines, l)
	}
	if n := len(lines); n > launchStderrLines {
		lines = lines[n-launchStderrLines:]
	}
	for i, l := range lines {
		if len(l) > 160 {
			lines[i] = l[:160] + "…"
		}
	}
	if len(lines) > 0 {
		parts = append(parts, "stderr: "+strings.Join(lines, " | "))
	} else if len(parts) > 0 {
		parts = append(parts, "no stderr")
	}
	return strings.Join(parts, "; ")
}

var (
	ansiEscape  = regexp.MustCompile("\x1b\\[[0-9;]*m")
	processExit = regexp.MustCompile(`<process did exit: exitCode=(-?\d+|null), signal=(\w+)>`)
	stderrLine  = regexp.MustCompile(`\[pid=\d+\]\[err\] ([^\n]*)`)
	wallExit    = regexp.MustCompile(`\[pid=\d+\]\[err\] ` + regexp.QuoteMeta(wall.ExitLinePrefix) + `((?:exit code -?\d+|signal \w+))`)
)

// launchError is a SetupError whose cause (the launch's full message) is kept for errors.Is and
// the debug log but left out of the one-line message.
type launchError struct {
	SetupError
	cause error
}

func (e *launchError) Unwrap() []error { return []error{ErrSetup, e.cause} }

// Detail is the launch's full message, for the debug log.
func (e *launchError) Detail() string { return e.cause.Error() }

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
