package testutil

import (
	"os/exec"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	n := 0
	if !Eventually(time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition true on the third check: got n = %d", n)
	}
	n = 0
	if Eventually(3*PollInterval, func() bool { n++; return false }) {
		t.Errorf("a condition never true reported true")
	}
	if n < 2 {
		t.Errorf("a condition never true was checked %d times, want until the deadline and once after", n)
	}
}

func TestWaitOrKill(t *testing.T) {
	quick := exec.Command("true")
	if err := quick.Start(); err != nil {
		t.Fatal(err)
	}
	if !WaitOrKill(quick, 30*time.Second) {
		t.Errorf("a command that exits at once: reported killed")
	}
	hung := exec.Command("sleep", "60")
	if err := hung.Start(); err != nil {
		t.Fatal(err)
	}
	if WaitOrKill(hung, 50*time.Millisecond) {
		t.Errorf("a command that sleeps a minute: reported it exited by itself within 50ms")
	}
	if hung.ProcessState == nil || hung.ProcessState.Success() {
		t.Errorf("the sleeping command was not killed: %v", hung.ProcessState)
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		cmd  *exec.Cmd
		code int
		ran  bool
	}{
		{"success", exec.Command("true"), 0, true},
		{"exit 3", exec.Command("sh", "-c", "exit 3"), 3, true},
		{"killed by a signal", exec.Command("sh", "-c", "kill -9 $$"), -1, true},
		{"no such program", exec.Command("/nonexistent/browser-agent-test"), 0, false},
	} {
		code, ok := ExitCode(tt.cmd.Run())
		if code != tt.code || ok != tt.ran {
			t.Errorf("%s: got %d, %t; want %d, %t", tt.name, code, ok, tt.code, tt.ran)
		}
	}
}
