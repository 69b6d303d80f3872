package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/browser-agent/browser-agent/audit"
)

// Store is what a queued run records through: *audit.Store is one.
type Store interface {
	BeginRun(ctx context.Context, r audit.Run) (string, error)
	AddStep(ctx context.Context, st audit.Step) error
	FinishRunOnce(ctx context.Context, r audit.Run) error
	InterruptRun(ctx context.Context, id, reason string) (bool, error)
}

var _ Store = (*audit.Store)(nil)

// ReasonRescued is the reason of a queued run whose worker ended (killed, crashed, its machine
// gone) before the run's end was recorded, when the queue handed its job out again.
const ReasonRescued = audit.ReasonCrashed + ": the worker that ran it ended before the run's end was recorded; the queue did not run it again"

// ReasonExpired is the reason of a queued run that no worker took before its job's NotAfter.
const ReasonExpired = "interrupted: it waited in the queue past the time its page waits for it; it was not run"

// Expire records, once, that job's run was not run because it expired: its row begun and ended
// interrupted (ReasonExpired). A run already begun is left to Settle.
func Expire(ctx context.Context, store Store, job Job) error {
	rec := NewRecorder(store, job)
	if _, err := rec.BeginRun(ctx, audit.Run{Preset: job.Preset, Model: job.Model}); err != nil {
		if rec.Again() {
			return rec.Settle(ctx)
		}
		return fmt.Errorf("queue: run %s: %w", job.RunID, err)
	}
	if err := rec.FinishRun(ctx, audit.Run{ID: job.RunID, Status: audit.StatusInterrupted, Reason: ReasonExpired}); err != nil && !errors.Is(err, audit.ErrEnded) {
		return fmt.Errorf("queue: run %s: %w", job.RunID, err)
	}
	return nil
}

// Recorder is the coordinator's recorder for one queued run: the audit store, with the
// check-and-set that makes the run execute once. BeginRun begins the row under the job's run ID;
// when a row with that ID exists (an earlier attempt began it: its worker died, or it ended and the
// job was handed out again before River recorded it done), it fails with audit.ErrStarted, so the
// coordinator ends at once, before any browser or model work. FinishRun records the end only while
// the row is running (audit.Store.FinishRunOnce). After the coordinator, Close ends a row an
// earlier attempt left running as interrupted (ReasonRescued).
type Recorder struct {
	store Store
	id    string

	mu      sync.Mutex
	again   bool // the run had begun before this attempt
	ran     bool // this attempt began it
	settled bool
}

// NewRecorder returns the recorder of the run that job names.
func NewRecorder(store Store, job Job) *Recorder { return &Recorder{store: store, id: job.RunID} }

// BeginRun begins the run's row under the job's run ID: the claim.
func (r *Recorder) BeginRun(ctx context.Context, run audit.Run) (string, error) {
	run.ID = r.id
	id, err := r.store.BeginRun(ctx, run)
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, audit.ErrStarted) {
		r.again = true
	} else if err == nil {
		r.ran = true
	}
	return id, err
}

// AddStep records a step.
func (r *Recorder) AddStep(ctx context.Context, st audit.Step) error { return r.store.AddStep(ctx, st) }

// FinishRun records the run's end once.
func (r *Recorder) FinishRun(ctx context.Context, run audit.Run) error {
	return r.store.FinishRunOnce(ctx, run)
}

// Ran reports whether this attempt ran the run (began its row).
func (r *Recorder) Ran() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran
}

// Again reports whether the run had begun before this attempt, which therefore did not run it.
func (r *Recorder) Again() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.again
}

// Settle is called after the coordinator: when the run had begun before this attempt, it ends the
// row interrupted (ReasonRescued) if it is still running. It returns an error only when the store
// could not be written, so that the job is tried again.
func (r *Recorder) Settle(ctx context.Context) error {
	r.mu.Lock()
	again := r.again && !r.settled
	r.settled = true
	r.mu.Unlock()
	if !again {
		return nil
	}
	if _, err := r.store.InterruptRun(context.WithoutCancel(ctx), r.id, ReasonRescued); err != nil {
		return fmt.Errorf("queue: run %s: %w", r.id, err)
	}
	return nil
}
