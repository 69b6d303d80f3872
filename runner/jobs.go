package runner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/policy"
)

// Ledger is the daily model-spend ledger; *audit.Store is one.
type Ledger interface {
	SpendOn(ctx context.Context, day string) (float64, error)
	AddSpend(ctx context.Context, day string, usd float64) error
}

var _ Ledger = (*audit.Store)(nil)

// DefaultRunDeadline bounds one run unless its front end says otherwise: serve's live runs and every
// worker of its queue must give the same.
const DefaultRunDeadline = 2 * time.Minute

// JobRunner runs the queue's jobs (internal/queue) without a live view: "browser-agent worker"
// and the workers inside "serve" for runs no page of theirs follows. Each run goes through Execute,
// as a live run does, recording through a queue.Recorder: it runs once, whatever River does.
type JobRunner struct {
	Policy *policy.Policy
	Launch coordinator.Launcher
	// Presets are the presets a job may name (the demo's, from "browser-agent worker"); a job naming
	// another runs with no task, so it is rejected, recorded.
	Presets []coordinator.Preset
	// Model builds the model a job names ("offline", "script:FILE", "openai:NAME"); an error ends
	// the run as an error, recorded.
	Model func(spec string) (ModelFunc, error)
	Store queue.Store
	// Deadline bounds one run (the coordinator's deadline).
	Deadline time.Duration
	// Ledger, when set, is charged with each run's model spend.
	Ledger Ledger
	// Done, when set, is told each job's outcome: whether this attempt ran the run, and its result.
	Done func(job queue.Job, ran bool, res coordinator.Result)
	// Launched, when set, is told when a job's run asks for its browser: the run executes.
	Launched func(job queue.Job)
}

// Exec is the queue.Exec of the runner.
func (jr *JobRunner) Exec(ctx context.Context, job queue.Job, attempt int) error {
	if job.Expired(time.Now()) {
		return queue.Expire(ctx, jr.Store, job)
	}
	rec := queue.NewRecorder(jr.Store, job)
	spec := RunSpec{Policy: jr.Policy, Task: job.Task, ModelName: job.Model, Launch: jr.Launch}
	if jr.Launched != nil && jr.Launch != nil {
		spec.Launch = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			jr.Launched(job)
			return jr.Launch(ctx, pol)
		}
	}
	if job.Preset != "" {
		p, ok := PresetNamed(jr.Presets, job.Preset)
		if !ok {
			spec.Task = ""
		} else {
			spec.Preset, spec.Task = p, p.Task
		}
	}
	if jr.Model != nil {
		m, err := jr.Model(job.Model)
		if err != nil {
			m = func() (coordinator.Model, error) { return nil, err }
		}
		spec.Model = m
	}
	spec.Options = []coordinator.Option{coordinator.WithRecorder(rec), coordinator.WithDeadline(jr.Deadline)}
	res, _ := Execute(ctx, spec, func(Moment) {})
	if err := rec.Settle(ctx); err != nil {
		return err
	}
	if rec.Ran() && jr.Ledger != nil && res.Usage.CostUSD > 0 {
		if err := jr.Ledger.AddSpend(context.WithoutCancel(ctx), audit.Day(time.Now()), res.Usage.CostUSD); err != nil {
			return fmt.Errorf("spend ledger: %w", err)
		}
	}
	if jr.Done != nil {
		jr.Done(job, rec.Ran(), res)
	}
	return nil
}

// WarmLauncher keeps n browsers started before they are needed, one per worker (see pool): each
// is launched by launch (its own Chromium, profile and egress proxy), handed to one run only, and
// the next one starts when that run has closed it. stop closes the unused ones and waits; call it
// after the last run.
func WarmLauncher(ctx context.Context, launch coordinator.Launcher, pol *policy.Policy, n int) (l coordinator.Launcher, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan warmed)
	ps := make([]*Pool, max(n, 1))
	for i := range ps {
		p := &Pool{launch: launch, pol: pol, ready: ready, now: time.Now}
		p.wg.Add(1)
		go p.loop(ctx)
		ps[i] = p
	}
	l = func(ctx context.Context, _ *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return ps[0].Take(ctx, PhaseOf(ctx))
	}
	return l, func() {
		cancel()
		for _, p := range ps {
			p.Wait()
		}
	}
}

// PresetNamed is the preset of ps called name.
func PresetNamed(ps []coordinator.Preset, name string) (coordinator.Preset, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return coordinator.Preset{}, false
}
