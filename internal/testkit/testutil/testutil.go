// Package testutil holds the helpers that the tests of several packages share.
package testutil

import (
	"errors"
	"net"
	"os/exec"
	"testing"
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

// HostIPv4 is this machine's first IPv4 address outside loopback, on an interface that is up: an
// address a canary can listen on that is not loopback (the wall's tests). The test fails when
// the machine has none.
func HostIPv4(t testing.TB) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	t.Fatal("this test needs an IPv4 address outside loopback for its canaries")
	return ""
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

// ExitCode is the exit code a command's Run or Wait error stands for: 0 for nil, the process's
// own code for an *exec.ExitError (-1 when a signal ended it). ok is false for any other error:
// the command did not run or was not waited for.
func ExitCode(err error) (code int, ok bool) {
	var xe *exec.ExitError
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &xe):
		return xe.ExitCode(), true
	}
	return 0, false
}
