// Package startup bounds the phases of a command's start-up (the audit store, the policy, the
// demo site, the model settings, the driver, the proxy, Chromium): each ends within Timeout, or
// at once when its context ends (a signal), instead of waiting for ever on a part that does not
// answer.
package startup

import (
	"context"
	"fmt"
	"os"
	"time"
)

// EnvTimeout names the bound of one start-up phase, as a Go duration ("30s").
const EnvTimeout = "BROWSER_AGENT_START_TIMEOUT"

// DefaultTimeout is the bound of one phase without EnvTimeout: far above a cold start on a busy
// machine (a few seconds), far below the patience of a person.
const DefaultTimeout = 30 * time.Second

// EnvPause names a phase at whose start the command waits until its context ends (a signal).
// The start-up fault tests use it to send a signal during a phase that is otherwise too short
// to hit.
const EnvPause = "BROWSER_AGENT_TEST_PAUSE"

// Timeout is the bound of one start-up phase: EnvTimeout when it is a positive duration, else
// DefaultTimeout.
func Timeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(EnvTimeout)); err == nil && d > 0 {
		return d
	}
	return DefaultTimeout
}

// Logf, when set, gets a line at the start of each phase (the command line sets it with
// BROWSER_AGENT_DEBUG).
var Logf func(format string, args ...any)

// Begin marks the start of phase. When EnvPause names it, it says so on stderr and waits until
// ctx ends. It returns ctx's cause when ctx has ended.
func Begin(ctx context.Context, phase string) error {
	if Logf != nil {
		Logf("start-up: %s", phase)
	}
	if os.Getenv(EnvPause) == phase {
		fmt.Fprintf(os.Stderr, "start-up: paused at %s (%s)\n", phase, EnvPause)
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// TimeoutError is a phase that did not end within its bound.
type TimeoutError struct {
	Phase string        // "policy", "audit store", ...
	What  string        // what did not answer, with where: "policy file /etc/p.yaml"
	After time.Duration // the bound
	Fix   string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: %s did not answer within %s; fix: %s", e.Phase, e.What, e.After, e.Fix)
}

// Do runs fn as phase (Begin first), bounded by ctx and Timeout: when ctx ends first it returns
// ctx's cause, when the bound passes a *TimeoutError with what and fix. fn is then left to end
// on its own (it must not hold anything the command needs): use it for work that takes no
// context and starts no process.
func Do[T any](ctx context.Context, phase, what, fix string, fn func() (T, error)) (T, error) {
	var zero T
	if err := Begin(ctx, phase); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	bound := Timeout()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-timer.C:
		return zero, &TimeoutError{Phase: phase, What: what, After: bound, Fix: fix}
	}
}
