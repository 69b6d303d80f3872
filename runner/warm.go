package runner

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
)

// Start phases of a run, sent as EventPhase while its browser starts.
const (
	PhaseStarting = "starting the browser"
	PhaseWarm     = "taking a browser started before the run (its own profile and egress proxy)"
	PhaseWaiting  = "waiting for the browser being started"
	PhaseCold     = "launching the egress proxy and Chromium"
	PhaseReady    = "browser ready"
)

// maxWarmAge is how long a browser started in advance waits for a run before it is closed and
// another one started.
const maxWarmAge = 10 * time.Minute

// Pool keeps the next run's browser started before it is needed: one browser, launched by the
// Launcher (its own egress proxy, a fresh profile, verified as launched by us), waits for the next
// run, and as soon as the run that took it closes it the next one starts. A browser is handed to one run only and
// closed by it; an unused one is closed when it is too old or the pool stops. Nothing of one run
// (browser, profile, cookies, proxy) is ever given to another.
type Pool struct {
	launch coordinator.Launcher
	pol    *policy.Policy
	ready  chan warmed // unbuffered: a browser changes hands exactly once
	now    func() time.Time
	wg     sync.WaitGroup

	mu        sync.Mutex
	launching bool // a launch is under way
}

// warmed is one browser started in advance, or why it could not start.
type warmed struct {
	b   coordinator.Browser
	c   io.Closer
	err error
	at  time.Time // when it was ready
}

func NewPool(ctx context.Context, launch coordinator.Launcher, pol *policy.Policy, now func() time.Time) *Pool {
	p := &Pool{launch: launch, pol: pol, ready: make(chan warmed), now: now}
	p.wg.Add(1)
	go p.loop(ctx)
	return p
}

// loop starts one browser at a time and waits for a run to take it, until ctx ends.
func (p *Pool) loop(ctx context.Context) {
	defer p.wg.Done()
	for ctx.Err() == nil {
		p.mu.Lock()
		p.launching = true
		p.mu.Unlock()
		// The pool's context, not one per launch: what the browser starts (its egress proxy) lives
		// as long as that context, and the browser outlives this call. The bridge bounds the launch.
		b, c, err := p.launch(ctx, p.pol)
		p.mu.Lock()
		p.launching = false
		p.mu.Unlock()
		w := warmed{b: b, c: c, err: err, at: p.now()}
		if err != nil {
			// Handed to the next run, which fails saying why; wait a little before retrying.
			select {
			case p.ready <- w:
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		// The run that takes it gives back a closer that says when it is done: the next browser
		// starts then, so that its launch does not compete with the run for the CPU.
		done := make(chan struct{})
		w.c = closeThen(c, done)
		t := time.NewTimer(maxWarmAge)
		select {
		case p.ready <- w:
			t.Stop()
		case <-t.C:
			c.Close()
			continue
		case <-ctx.Done():
			t.Stop()
			c.Close()
			return
		}
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// closeThen closes c, then closes done (once).
func closeThen(c io.Closer, done chan struct{}) io.Closer {
	var once sync.Once
	return closerFunc(func() error {
		err := c.Close()
		once.Do(func() { close(done) })
		return err
	})
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Take hands the waiting browser to a run, or waits for the one being started. It says which
// through phase.
func (p *Pool) Take(ctx context.Context, phase func(string)) (coordinator.Browser, io.Closer, error) {
	select {
	case w := <-p.ready:
		phase(PhaseWarm)
		return w.b, w.c, w.err
	default:
	}
	phase(PhaseWaiting)
	select {
	case w := <-p.ready:
		return w.b, w.c, w.err
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("waiting for the browser: %w", ctx.Err())
	}
}

// Wait returns once the pool has stopped (its context ended) and closed its browser.
func (p *Pool) Wait() { p.wg.Wait() }

// phaseKey carries a run's phase reporter to its Launcher.
type phaseKey struct{}

// WithPhase gives ctx a reporter of start phases that the run's Launcher (a warm pool's Take)
// tells which way its browser came.
func WithPhase(ctx context.Context, f func(string)) context.Context {
	return context.WithValue(ctx, phaseKey{}, f)
}

// PhaseOf is ctx's phase reporter (WithPhase), or one that drops every phase.
func PhaseOf(ctx context.Context) func(string) {
	if f, ok := ctx.Value(phaseKey{}).(func(string)); ok {
		return f
	}
	return func(string) {}
}
