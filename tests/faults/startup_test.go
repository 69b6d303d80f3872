package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
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

// chromiumTimeout is that bound for a Chromium that never answers, after a real driver started.
const chromiumTimeout = "20s"

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
	var signaled time.Time
	sent := make(chan struct{})
	if c.signal != 0 {
		go func() {
			defer close(sent)
			if testutil.Eventually(startBound, func() bool { return c.ready(stderr.String()) }) {
				signaled = time.Now()
				cmd.Process.Signal(c.signal)
			}
		}()
	}
	err := cmd.Wait()
	if c.signal != 0 {
		<-sent
		if !signaled.IsZero() {
			t.Logf("exited %s after %s", time.Since(signaled).Round(time.Millisecond), c.signal) // measured, not asserted
		}
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("hung: no exit within %s (killed)\nstderr:\n%s", startBound, res.stderr)
	}
	code, ok := testutil.ExitCode(err)
	if !ok {
		t.Fatal(err)
	}
	res.exit = code
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
	if res.db == "" { // the store could not be opened: the result is on stdout only
		return
	}
	got, _ := rows(t, res.db)
	// The store keeps MaxReasonLen bytes of a reason: a launch failure's reason (Chromium's exit and
	// last stderr lines, a long temporary path) may be longer, and is kept from its start.
	wantReason := policy.Text(res.reason, audit.MaxReasonLen)
	if len(got) != 1 || got[0].ID != res.runID || got[0].Status != status || got[0].Reason != wantReason {
		t.Errorf("audit: got %+v, want run %s %s %q", got, res.runID, status, wantReason)
	}
}

// fakeDriver makes a driver directory: package/ with a package.json of version (the real
// package's other files linked), and node, a shell script with body, when body is not "".
func fakeDriver(t *testing.T, version, nodeBody string) string {
	t.Helper()
	real := filepath.Join(testbrowser.DriverDir(), "package")
	dir := t.TempDir()
	pkg := filepath.Join(dir, "package")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "package.json" {
			if err := os.Symlink(filepath.Join(real, e.Name()), filepath.Join(pkg, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "playwright-core", "version": "`+version+`"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if nodeBody != "" {
		script(t, filepath.Join(dir, "node"), nodeBody)
	}
	return dir
}

// script writes an executable shell script.
func script(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// hangs is the body of a fake that says it started (a file at started) and never answers.
func hangs(started string) string { return "echo $$ > " + started + "\nexec sleep 600" }

func exists(path string) func(string) bool {
	return func(string) bool { _, err := os.Stat(path); return err == nil }
}

func paused(phase string) func(string) bool {
	return func(stderr string) bool { return strings.Contains(stderr, "start-up: paused at "+phase+" ") }
}

const driverVersion = "1.64.1"

// TestStartupFaults: each broken part ends the run with exit 1 and a reason naming it, where it
// was looked for, and the fix; nothing is left running and the run has its audit row (but for
// an audit store that cannot be written).
func TestStartupFaults(t *testing.T) {
	t.Parallel()
	realDriver := "BROWSER_AGENT_DRIVER_DIR=" + testbrowser.DriverDir()
	short := "BROWSER_AGENT_START_TIMEOUT=" + startTimeout
	cases := []struct {
		name  string
		setup func(t *testing.T) (startCase, []string) // the case and what its reason must say
		noRow bool                                     // the store cannot be written: no audit row
	}{
		{"driver missing", func(t *testing.T) (startCase, []string) {
			return startCase{}, []string{"playwright driver not found", "$BROWSER_AGENT_DRIVER_DIR", "driver/ above cwd or binary",
				"/usr/lib/browser-agent/driver", "run scripts/setup", "browser-agent doctor"}
		}, false},
		{"driver of another version", func(t *testing.T) (startCase, []string) {
			dir := fakeDriver(t, "1.50.0", "exec /usr/bin/env node \"$@\"")
			return startCase{env: []string{"BROWSER_AGENT_DRIVER_DIR=" + dir}},
				[]string{"playwright driver of another version", "(1.50.0, need " + driverVersion + ")", "at " + dir, "scripts/setup", "browser-agent doctor"}
		}, false},
		{"node missing", func(t *testing.T) (startCase, []string) {
			dir := fakeDriver(t, driverVersion, "")
			return startCase{env: []string{"BROWSER_AGENT_DRIVER_DIR=" + dir}},
				[]string{"node not found at " + filepath.Join(dir, "node"), "PLAYWRIGHT_NODEJS_PATH", "scripts/setup", "browser-agent doctor"}
		}, false},
		{"node that never answers", func(t *testing.T) (startCase, []string) {
			dir := fakeDriver(t, driverVersion, hangs(filepath.Join(t.TempDir(), "started")))
			return startCase{env: []string{"BROWSER_AGENT_DRIVER_DIR=" + dir, short}},
				[]string{"playwright driver did not answer within " + startTimeout, "at " + dir, "browser-agent doctor"}
		}, false},
		{"chromium missing", func(t *testing.T) (startCase, []string) {
			path := filepath.Join(t.TempDir(), "chromium")
			return startCase{env: []string{realDriver, "BROWSER_AGENT_CHROMIUM=" + path}},
				[]string{"chromium not found at " + path, "BROWSER_AGENT_CHROMIUM", "scripts/setup", "browser-agent doctor"}
		}, false},
		{"chromium exiting at launch", func(t *testing.T) (startCase, []string) {
			path := script(t, filepath.Join(t.TempDir(), "chromium"), "echo 'cannot open display' >&2\nexit 1")
			return startCase{env: []string{realDriver, "BROWSER_AGENT_CHROMIUM=" + path}},
				[]string{"chromium exited at launch (exit code 1; stderr: cannot open display) at " + path, "BROWSER_AGENT_CHROMIUM", "browser-agent doctor"}
		}, false},
		{"chromium that never answers", func(t *testing.T) (startCase, []string) {
			path := script(t, filepath.Join(t.TempDir(), "chromium"), hangs(filepath.Join(t.TempDir(), "started")))
			// Its bound is longer: the real driver must start within it first, on a loaded machine.
			return startCase{env: []string{realDriver, "BROWSER_AGENT_CHROMIUM=" + path, "BROWSER_AGENT_START_TIMEOUT=" + chromiumTimeout}},
				[]string{"chromium did not answer within " + chromiumTimeout + " at " + path, "BROWSER_AGENT_CHROMIUM", "browser-agent doctor"}
		}, false},
		{"demo-site port taken", func(t *testing.T) (startCase, []string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			addr := ln.Addr().String()
			return startCase{env: []string{realDriver, "BROWSER_AGENT_DEMO_ADDR=" + addr}},
				[]string{"demo site cannot listen on " + addr + " (address already in use)", "BROWSER_AGENT_DEMO_ADDR=127.0.0.1:0", "browser-agent doctor"}
		}, false},
		{"audit store unwritable", func(t *testing.T) (startCase, []string) {
			return startCase{}, []string{"audit store: ", "audit.db: read-only", "give another --db"}
		}, true},
		{"policy unreadable", func(t *testing.T) (startCase, []string) {
			fifo := filepath.Join(t.TempDir(), "policy.yaml")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			return startCase{env: []string{realDriver}, args: []string{"--policy", fifo}},
				[]string{"policy file " + fifo + " cannot be read", "not a regular file", "--policy", "browser-agent doctor"}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, want := tc.setup(t)
			var res startResult
			if tc.noRow {
				db := filepath.Join(t.TempDir(), "audit.db")
				if err := os.WriteFile(db, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				testutil.ReadOnly(t, db)
				res = start(t, c, "run", "--preset", "lookup", "--json", "--db", db)
				res.db = ""
			} else {
				res = start(t, c)
			}
			wantFailure(t, res, want...)
		})
	}
}

// TestStartupSignals sends SIGTERM or SIGINT during each phase of start-up: the run ends with
// 143 or 130, interrupted, with its audit row (in the audit store's own phase too), and nothing
// left running. A phase a part holds for ever (a node or a Chromium that never answers) is hit
// while the part hangs; the others, too short to hit, pause at their start (BROWSER_AGENT_TEST_PAUSE).
func TestStartupSignals(t *testing.T) {
	t.Parallel()
	realDriver := "BROWSER_AGENT_DRIVER_DIR=" + testbrowser.DriverDir()
	pause := func(phase string) startCase {
		return startCase{env: []string{realDriver, "BROWSER_AGENT_TEST_PAUSE=" + phase}, ready: paused(phase)}
	}
	cases := []struct {
		name  string
		sig   syscall.Signal
		setup func(t *testing.T) startCase
	}{
		{"audit store", syscall.SIGTERM, func(t *testing.T) startCase { return pause("audit store") }},
		{"policy", syscall.SIGINT, func(t *testing.T) startCase {
			c := pause("policy")
			file := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(file, demosite.PolicyYAML("http://127.0.0.1:8081"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.args = []string{"--policy", file}
			return c
		}},
		{"demo site", syscall.SIGTERM, func(t *testing.T) startCase { return pause("demo site") }},
		{"model settings", syscall.SIGINT, func(t *testing.T) startCase { return pause("model settings") }},
		{"driver", syscall.SIGTERM, func(t *testing.T) startCase { return pause("driver") }},
		{"node that never answers", syscall.SIGINT, func(t *testing.T) startCase {
			started := filepath.Join(t.TempDir(), "started")
			dir := fakeDriver(t, driverVersion, hangs(started))
			return startCase{env: []string{"BROWSER_AGENT_DRIVER_DIR=" + dir}, ready: exists(started)}
		}},
		{"proxy", syscall.SIGTERM, func(t *testing.T) startCase { return pause("proxy") }},
		{"chromium", syscall.SIGINT, func(t *testing.T) startCase { return pause("chromium") }},
		{"chromium that never answers", syscall.SIGTERM, func(t *testing.T) startCase {
			started := filepath.Join(t.TempDir(), "started")
			path := script(t, filepath.Join(t.TempDir(), "chromium"), hangs(started))
			return startCase{env: []string{realDriver, "BROWSER_AGENT_CHROMIUM=" + path}, ready: exists(started)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.setup(t)
			c.signal = tc.sig
			// No phase bound of its own ends the phase before the test's: only the signal can.
			c.env = append(c.env, "BROWSER_AGENT_START_TIMEOUT=10m")
			res := start(t, c)
			exit, name := 143, "SIGTERM"
			if tc.sig == syscall.SIGINT {
				exit, name = 130, "SIGINT"
			}
			wantEnd(t, res, exit, "interrupted", "interrupted: "+name+" received")
		})
	}
}

// TestDoctor runs browser-agent doctor with every part working (exit 0, each line ok, with the
// versions) and with each part broken in turn (exit 1, the part's line FAIL with its fix).
func TestDoctor(t *testing.T) {
	t.Parallel()
	realDriver := "BROWSER_AGENT_DRIVER_DIR=" + testbrowser.DriverDir()
	type line struct {
		Part, Uses, Error, Fix string
		OK                     bool
	}
	doctor := func(t *testing.T, env []string, args ...string) (int, map[string]line, string) {
		db := filepath.Join(t.TempDir(), "audit.db")
		res := start(t, startCase{env: env}, append([]string{"doctor", "--json", "--db", db}, args...)...)
		var out struct {
			OK     bool
			Checks []line
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("doctor --json: %v\n%s\n%s", err, res.stdout, res.stderr)
		}
		byPart := map[string]line{}
		for _, l := range out.Checks {
			byPart[l.Part] = l
		}
		if out.OK != (res.exit == 0) {
			t.Errorf("ok %v with exit %d", out.OK, res.exit)
		}
		return res.exit, byPart, res.stdout
	}
	parts := []string{"audit store", "policy", "driver", "node", "chromium"}
	t.Run("all working", func(t *testing.T) {
		t.Parallel()
		exit, got, out := doctor(t, []string{realDriver})
		if exit != 0 {
			t.Errorf("exit %d, want 0\n%s", exit, out)
		}
		for _, p := range parts {
			if !got[p].OK {
				t.Errorf("%s: %+v, want ok", p, got[p])
			}
		}
		for p, want := range map[string]string{"driver": "(playwright-core " + driverVersion + ")", "node": "(v", "chromium": "launches"} {
			if !strings.Contains(got[p].Uses, want) {
				t.Errorf("%s uses %q, want it to say %q", p, got[p].Uses, want)
			}
		}
	})
	fifo := filepath.Join(t.TempDir(), "policy.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	broken := []struct {
		name, part string
		env        func(t *testing.T) []string
		args       []string
		err, fix   string
	}{
		{"driver missing", "driver", func(t *testing.T) []string { return nil }, nil, "playwright driver not found", "BROWSER_AGENT_DRIVER_DIR"},
		{"driver of another version", "driver", func(t *testing.T) []string {
			return []string{"BROWSER_AGENT_DRIVER_DIR=" + fakeDriver(t, "1.50.0", "exec /usr/bin/env node \"$@\"")}
		}, nil, "(1.50.0, need " + driverVersion + ")", "scripts/setup"},
		{"node missing", "driver", func(t *testing.T) []string {
			return []string{"BROWSER_AGENT_DRIVER_DIR=" + fakeDriver(t, driverVersion, "")}
		}, nil, "node not found", "PLAYWRIGHT_NODEJS_PATH"},
		{"chromium missing", "chromium", func(t *testing.T) []string {
			return []string{realDriver, "BROWSER_AGENT_CHROMIUM=/nonexistent/chromium"}
		}, nil, "chromium not found", "BROWSER_AGENT_CHROMIUM"},
		{"chromium exiting at launch", "chromium", func(t *testing.T) []string {
			return []string{realDriver, "BROWSER_AGENT_CHROMIUM=" + script(t, filepath.Join(t.TempDir(), "chromium"),
				"[ \"$1\" = --version ] && { echo 'Chromium 1.0'; exit 0; }\necho 'no display here' >&2\nexit 7")}
		}, nil, "chromium exited at launch (exit code 7; stderr: no display here)", "BROWSER_AGENT_CHROMIUM"},
		{"policy unreadable", "policy", func(t *testing.T) []string { return []string{realDriver} }, []string{"--policy", fifo},
			"not a regular file", "--policy"},
	}
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exit, got, out := doctor(t, tc.env(t), tc.args...)
			l := got[tc.part]
			if exit != 1 || l.OK || !strings.Contains(l.Error, tc.err) || !strings.Contains(l.Fix, tc.fix) {
				t.Errorf("exit %d, %s: %+v; want exit 1, FAIL saying %q with a fix naming %q\n%s", exit, tc.part, l, tc.err, tc.fix, out)
			}
		})
	}
}
