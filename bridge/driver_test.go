package bridge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/internal/wall"
)

// TestDriverLauncher checks that the driver starts through the launcher (js/cli.js), so that
// playwright-go's version check does not load Playwright: node is a wrapper here that logs the
// arguments of every start. The driver must start, cli.js must never be run for --version, and
// the launcher must answer it with the checked version. A launcher file that is not what the
// bridge writes is replaced; an operator's PLAYWRIGHT_CLI_PATH is left as it is.
func TestDriverLauncher(t *testing.T) {
	dir, err := findDriverDir("")
	if err != nil {
		t.Fatal(err)
	}
	realNode := os.Getenv("PLAYWRIGHT_NODEJS_PATH")
	if realNode == "" {
		realNode = filepath.Join(dir, "node")
	}
	tmp := t.TempDir()
	log := filepath.Join(tmp, "node.log")
	wrapper := filepath.Join(tmp, "node")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + realNode + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PLAYWRIGHT_NODEJS_PATH", wrapper)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	cli := filepath.Join(dir, "package", "cli.js")
	starts := func() []string {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(log)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	start := func() {
		t.Helper()
		rt, err := NewRuntime(WithDriverDir(dir), WithLogf(t.Logf))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	}

	start()
	got := starts()
	launchers, _ := filepath.Glob(filepath.Join(tmp, "cache", "browser-agent", "driver-cli-*.js"))
	if len(launchers) != 1 {
		t.Fatalf("launchers written: %v", launchers)
	}
	launcher := launchers[0]
	want := []string{launcher + " --version", launcher + " run-driver"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("node started as %q, want %q (cli.js must not be run for the version check)", got, want)
	}
	out, err := exec.Command(realNode, launcher, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "Version "+DriverVersion {
		t.Fatalf("launcher --version: %q, %v", out, err)
	}
	good, err := os.ReadFile(launcher)
	if err != nil {
		t.Fatal(err)
	}

	// Another script in the launcher's place is not run: it is written again.
	if err := os.WriteFile(launcher, []byte("process.stdout.write('Version "+DriverVersion+"\\n'); require('fs').writeFileSync('"+filepath.Join(tmp, "ran")+"', '')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start()
	starts()
	if _, err := os.Stat(filepath.Join(tmp, "ran")); err == nil {
		t.Error("a launcher file the bridge did not write was run")
	}
	if now, _ := os.ReadFile(launcher); string(now) != string(good) {
		t.Error("the launcher was not written again")
	}

	// The operator's own CLI path is used as it is.
	t.Setenv("PLAYWRIGHT_CLI_PATH", cli)
	start()
	want = []string{cli + " --version", cli + " run-driver"}
	if got := starts(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("with PLAYWRIGHT_CLI_PATH node started as %q, want %q", got, want)
	}
}

// TestLaunchExit checks what a failed launch's error says of how Chromium ended, from Playwright's
// own messages (taken from playwright-core 1.64.1 launching a script that writes to stderr and
// exits, and one killed by a signal): the exit code or signal and the last stderr lines, each
// once although the message repeats them in its call log.
func TestLaunchExit(t *testing.T) {
	const exited = "browserType.launchPersistentContext: Target page, context or browser has been closed\nBrowser logs:\n\n" +
		"<launching> /tmp/fake --no-sandbox about:blank\n<launched> pid=18330\n[pid=18330][err] first line\n" +
		"[pid=18330][err] second line\n[pid=18330][err] [1205/130501.1:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox!\nCall log:\n" +
		"\x1b[2m  - <launched> pid=18330\x1b[22m\n\x1b[2m  - [pid=18330][err] first line\x1b[22m\n" +
		"\x1b[2m  - [pid=18330][err] second line\x1b[22m\n" +
		"\x1b[2m  - [pid=18330] <process did exit: exitCode=3, signal=null>\x1b[22m\n"
	const killed = "Browser logs:\n<launched> pid=18340\nCall log:\n\x1b[2m  - [pid=18340] <process did exit: exitCode=null, signal=SIGSEGV>\x1b[22m\n"
	// Behind the wall: Playwright killed the wall's launcher when Chromium's pipe closed, before
	// the launcher could exit with Chromium's status, which it wrote on stderr first.
	const walled = "Browser logs:\n<launched> pid=18350\n[pid=18350][err] no display here\n[pid=18350][err] " + wall.ExitLinePrefix + "exit code 7\n" +
		"Call log:\n\x1b[2m  - [pid=18350] <will force kill>\x1b[22m\n\x1b[2m  - [pid=18350] <process did exit: exitCode=null, signal=SIGKILL>\x1b[22m\n"
	for _, tc := range []struct{ msg, want string }{
		{walled, "exit code 7; stderr: no display here"},
		{exited, "exit code 3; stderr: first line | second line | [1205/130501.1:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox!"},
		{killed, "signal SIGSEGV; no stderr"},
		{"Timeout 30000ms exceeded.", ""},
	} {
		if got := launchExit(tc.msg); got != tc.want {
			t.Errorf("launchExit(%.40q…)\n got %q\nwant %q", tc.msg, got, tc.want)
		}
	}
}
