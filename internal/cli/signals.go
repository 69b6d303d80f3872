package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/browser-agent/browser-agent/coordinator"
)

// Exit codes of a run or a command ended by a signal: 128 + the signal's number, as a shell reports
// a process killed by it. The first SIGINT or SIGTERM ends the run interrupted (browser and proxy
// closed, the end recorded) and exits with this code; a second one exits at once with it.
const (
	ExitSIGINT  = 130
	ExitSIGTERM = 143
)

// exitNow ends the process at a second signal. Tests replace it.
var exitNow = os.Exit

// signals is the first-signal state of a command.
type signals struct {
	code atomic.Int32 // the exit code of the first signal; 0 before any
}

// Code is the exit code of the first signal received, ExitSIGINT when none was (an interrupt
// that came from elsewhere).
func (s *signals) Code() int {
	if c := s.code.Load(); c != 0 {
		return int(c)
	}
	return ExitSIGINT
}

// Received reports whether a signal arrived.
func (s *signals) Received() bool { return s.code.Load() != 0 }

// watchSignals returns a context that is canceled, with a *coordinator.Interrupt as its cause, at
// the first SIGINT or SIGTERM; at the second the process exits at once. stop ends the watch.
func watchSignals(stderr io.Writer) (context.Context, *signals, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &signals{}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		first := true
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				code := ExitSIGINT
				name := "SIGINT"
				if sig == syscall.SIGTERM {
					code, name = ExitSIGTERM, "SIGTERM"
				}
				if !first {
					fmt.Fprintf(stderr, "browser-agent: second %s: exiting now\n", name)
					exitNow(code)
					return
				}
				first = false
				s.code.Store(int32(code))
				fmt.Fprintf(stderr, "browser-agent: %s: stopping (send it again to exit at once)\n", name)
				cancel(&coordinator.Interrupt{Why: name + " received"})
			}
		}
	}()
	return ctx, s, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// debugEnabled reports whether BROWSER_AGENT_DEBUG asks for the details of failures on stderr
// (browser launch logs and the like), which never go into a result or the audit store.
func debugEnabled() bool {
	v := os.Getenv("BROWSER_AGENT_DEBUG")
	return v != "" && v != "0"
}
