package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testutil"
)

// The start-up faults, through the binary: a part missing or broken (the driver, node, Chromium,
// the demo site's port, the audit store, the policy) ends the run with exit 1 and a reason that
// names what was looked for, where, and what fixes it; a signal during any phase ends it with
// 130/143 and its audit row. Each run is bounded by a context: a run that hangs fails its test
// (the bound is not a speed assertion; it is far above what any case needs).

// startBound is how long a start-up case may take before it counts as hung.
const startBound = 2 * time.Minute

// startTimeout is the binary's start-up phase bound for the cases whose part never answers.
const startTimeout = "4s"

// lone is a copy of the binary in a directory of its own, so that no driver/ is found above it.
var lone string

func loneBinary(t *testing.T) string {
	t.Helper()
	if lone != "" {
		return lone
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "browser-agent-lone")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "browser-agent")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	lone = p
	return p
}

// startCase is one start-up of the binary.
type startCase struct {
	env  []string // added to a clean environment (no driver, Chromium or store variables)
	args []string // after "run --preset lookup --json --db DB"
	// signal, when set, is sent once ready reports true on the binary's stderr (polled).
	signal syscall.Signal
	ready  func(stderr string) bool
}

// startResult is what one start-up did.
type startResult struct {
	exit           int
	stdout, stderr string
	status, reason string // of the --json result
	runID          string
	db             string
}

// cleanEnv is the environment without what would point the binary at a driver, a Chromium or a
// store.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "BROWSER_AGENT_DRIVER_DIR", "BROWSER_AGENT_CHROMIUM", "BROWSER_AGENT_DB", "PLAYWRIGHT_NODEJS_PATH",
			"PLAYWRIGHT_CLI_PATH", "PLAYWRIGHT_DRIVER_PATH", "BROWSER_AGENT_DEBUG", "BROWSER_AGENT_START_TIMEOUT",
			"BROWSER_AGENT_DEMO_ADDR", "BROWSER_AGENT_TEST_PAUSE", "OPENAI_API_KEY", "OPENAI_BASE_URL":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// start runs the lone binary from an empty directory with c, bounded by startBound, and checks
// that no process of it is left behind.
func start(t *testing.T, c startCase, args ...string) startResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	mark := fmt.Sprintf("startup-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	res := startResult{db: filepath.Join(t.TempDir(), "audit.db")}
	if len(args) == 0 {
		args = append([]string{"run", "--preset", "lookup", "--json", "--db", res.db}, c.args...)
	}
	cmd := exec.CommandContext(ctx, loneBinary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), markerVar+"="+mark, "TMPDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, c.env...)
	var stdout bytes.Buffer
	var stderr testutil.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if c.signal != 0 {
		go func() {
			if testutil.Eventually(startBound, func() bool { return c.ready(stderr.String()) }) {
				cmd.Process.Signal(c.signal)
			}
		}()
	}
	err := cmd.Wait()
	res.stdout, res.stderr = stdout.String(), stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("hung: no exit within %s (killed)\nstderr:\n%s", startBound, res.stderr)
	}
	var xe *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe):
		res.exit = xe.ExitCode()
	default:
		t.Fatal(err)
	}
	var j struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(stdout.Bytes(), &j) == nil {
		res.status, res.reason, res.runID = j.Status, j.Reason, j.RunID
	}
	if !testutil.Eventually(30*time.Second, func() bool { return len(marked(mark)) == 0 }) {
		for _, p := range marked(mark) {
			t.Errorf("left behind: pid %d: %.200s", p.pid, p.cmd)
		}
	}
	return res
}

// wantFailure checks a start-up that failed: exit 1, status error, a reason holding every one of
// want (what was looked for, where, the fix), and the same run in the audit store.
func wantFailure(t *testing.T, res startResult, want ...string) {
	t.Helper()
	wantEnd(t, res, 1, "error", want...)
}

func wantEnd(t *testing.T, res startResult, exit int, status string, want ...string) {
	t.Helper()
	if res.exit != exit || res.status != status {
		t.Errorf("exit %d, status %q; want %d, %q\nstdout: %s\nstderr:\n%s", res.exit, res.status, exit, status, res.stdout, res.stderr)
	}
	for _, w := range want {
		if !strings.Contains(res.reason, w) {
			t.Errorf("reason %q does not say %q", res.reason, w)
		}
	}
	got, _ := rows(t, res.db)
	if len(got) != 1 || got[0].ID != res.runID || got[0].Status != status || got[0].Reason != res.reason {
		t.Errorf("audit: got %+v, want run %s %s %q", got, res.runID, status, res.reason)
	}
}

// TestStartupNoDriver is the run of a new user from a directory with no driver above it and no
// BROWSER_AGENT_DRIVER_DIR: it ends at once, saying where it looked and what to do.
func TestStartupNoDriver(t *testing.T) {
	t.Parallel()
	res := start(t, startCase{})
	wantFailure(t, res, "playwright driver not found", "BROWSER_AGENT_DRIVER_DIR", "/usr/lib/browser-agent/driver", "browser-agent doctor")
}

var _ = io.Discard
var _ = testbrowser.RepoRoot
