// Package testutil holds the helpers that the tests of several packages share.
package testutil

import (
	"os/exec"
	"time"
)

// PollInterval is how often Eventually checks its condition.
const PollInterval = 20 * time.Millisecond

// Eventually checks cond every PollInterval until it reports true or d has passed, and returns
// its last result. Tests use it to wait for what a browser or a server does in its own time,
// instead of sleeping a fixed time that a loaded machine may overrun.
func Eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(PollInterval) {
		if cond() {
			return true
		}
	}
	return cond()
}

// WaitOrKill waits up to d for cmd, already started, to exit, and kills it then. It reports
// whether cmd exited by itself within d.
func WaitOrKill(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return false
	}
}
