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
