package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/runner"
)

// Enqueuer puts runs on the run queue and takes off those no worker has taken: *queue.Queue is one.
type Enqueuer interface {
	Enqueue(ctx context.Context, j queue.Job) (int64, error)
	Cancel(ctx context.Context, id int64) error
}

// QueueStore is the audit store as the queue's runs need it: the once-only begin and end, and the
// rows of a run a worker of another process runs, which the page follows. *audit.Store is one.
type QueueStore interface {
	queue.Store
	Run(ctx context.Context, id string) (audit.Run, []audit.Step, error)
}

var _ QueueStore = (*audit.Store)(nil)

// WithQueue sends every live run through the run queue q (internal/queue): the server enqueues
// it, and a worker takes it. When the worker is one of this server's own (its queue.Exec is
// ExecJob), the run has its live view, sign-in handoff and result as without a queue; when it is a
// worker of another process ("browser-agent worker"), the page follows the run's audit rows: its
// steps, then its status and reason (the answer stays with that worker: the audit keeps metadata
// only). store is the audit store the queue's runs record in.
func WithQueue(q Enqueuer, store QueueStore) Option {
	return func(s *Server) { s.q = &queueState{enq: q, store: store, pending: map[string]*pendingRun{}} }
}

// queueState is the server's side of the queue: the runs it enqueued and waits for.
type queueState struct {
	enq   Enqueuer
	store QueueStore

	mu      sync.Mutex
	pending map[string]*pendingRun
}

// pendingRun is a run the server enqueued: one worker of this process may take it (taken), and
// gives its result on done.
type pendingRun struct {
	r      *run
	task   string
	preset coordinator.Preset
	once   sync.Once
	taken  chan struct{}
	done   chan coordinator.Result
}

// take reports whether the caller is the one worker of this process that runs p.
func (p *pendingRun) take() bool {
	ok := false
	p.once.Do(func() { ok = true; close(p.taken) })
	return ok
}

// queueWait is how long a run the server enqueued may wait for a worker: past it, a worker that
// takes its job does not run it (queue.Job.NotAfter), and the page shows it interrupted.
const queueWait = 5 * time.Minute

// followEvery is how often the page of a run worked by another process reads its audit rows.
const followEvery = 250 * time.Millisecond

// viaQueue enqueues r and waits for its result: from this server's own worker, or from the audit
// rows of a worker of another process. A server that stops takes off the queue a run no worker
// has taken yet.
func (s *Server) viaQueue(r *run, task string, preset coordinator.Preset) runner.ResultJSON {
	info := r.snapshot().RunInfo
	p := &pendingRun{r: r, task: task, preset: preset, taken: make(chan struct{}), done: make(chan coordinator.Result, 1)}
	s.q.mu.Lock()
	s.q.pending[r.id] = p
	s.q.mu.Unlock()
	defer func() {
		s.q.mu.Lock()
		delete(s.q.pending, r.id)
		s.q.mu.Unlock()
	}()
	job := queue.Job{RunID: r.id, Preset: preset.Name, Model: s.modelName, NotAfter: time.Now().Add(queueWait)}
	if preset.Name == "" {
		job.Task = task
	}
	jobID, err := s.q.enq.Enqueue(s.ctx, job)
	if err != nil {
		s.logf("web: %v", err)
		return errorResult(info, s.clock().UTC(), "queue: the run could not be queued; try again")
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-p.taken:
			return runner.ResultOf(<-p.done, s.fieldOrder)
		case <-s.ctx.Done():
			if p.take() { // no worker of ours has it: take it off the queue, unless another has
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				s.q.enq.Cancel(ctx, jobID)
				cancel()
				return stoppedResult(info, s.clock().UTC())
			}
			return runner.ResultOf(<-p.done, s.fieldOrder)
		case <-tick.C:
			rr, steps, err := s.q.store.Run(s.ctx, r.id)
			if err != nil {
				continue // not begun yet
			}
			select {
			case <-p.taken:
				continue // ours: its live view has the steps
			default:
			}
			for ; sent < len(steps); sent++ {
				if steps[sent].Tool == "request" {
					continue
				}
				st := steps[sent]
				r.moment(runner.Moment{Step: &coordinator.Step{Step: audit.Step{Entry: st.Entry, Tool: st.Tool, Duration: st.Duration}}})
			}
			if rr.Status != audit.StatusRunning && p.take() {
				return remoteResult(info, rr)
			}
		}
	}
}

// remoteResult is the result of a run a worker of another process ran, from its audit row.
func remoteResult(info RunInfo, rr audit.Run) runner.ResultJSON {
	res := errorResult(info, rr.FinishedAt, rr.Reason)
	res.RunID, res.Status, res.RecordID, res.Model, res.Simulated = rr.ID, coordinator.Status(rr.Status), rr.RecordID, rr.Model, rr.Simulated
	res.StartedAt = rr.StartedAt
	res.Usage = coordinator.Usage{PromptTokens: rr.PromptTokens, CompletionTokens: rr.CompletionTokens, ModelTurns: rr.ModelTurns, CostUSD: rr.CostUSD}
	return res
}

// ExecJob is the queue.Exec of this server's own workers: a run this server enqueued and waits
// for runs here with its live view; any other job (enqueued by another server, or before a
// restart) runs as "browser-agent worker" runs it.
func (s *Server) ExecJob(ctx context.Context, job queue.Job, attempt int) error {
	s.q.mu.Lock()
	p := s.q.pending[job.RunID]
	s.q.mu.Unlock()
	// The server's stop interrupts its runs with its own reason. At the end of a drain, serve
	// stops the queue (whose StopAndCancel cancels the job) and the server at once: the job's
	// cancel, while the server drains, is the server's stop too, whichever lands first. The
	// job's deadline is kept.
	parent := ctx
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	if d, ok := parent.Deadline(); ok {
		var cancelD context.CancelFunc
		ctx, cancelD = context.WithDeadline(ctx, d)
		defer cancelD()
	}
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	defer stop()
	stopJob := context.AfterFunc(parent, func() {
		switch {
		case errors.Is(parent.Err(), context.DeadlineExceeded):
			// The job's deadline: ctx has it too, and ends by it.
		case isClosed(s.draining):
			cancel(stopping)
		default:
			cancel(context.Cause(parent))
		}
	})
	defer stopJob()
	if p == nil || !p.take() {
		jr := &runner.JobRunner{Policy: s.pol, Launch: s.launch, Presets: s.offered, Store: s.q.store, Deadline: s.limits.RunDeadline,
			Model: func(spec string) (runner.ModelFunc, error) {
				if spec != s.modelName && !(spec == "" && s.modelName == "offline") {
					return nil, fmt.Errorf("model %q is not the one this server runs (%s)", spec, s.modelName)
				}
				return s.model, nil
			},
			Done: func(_ queue.Job, _ bool, res coordinator.Result) { s.spend.charge(res.Usage.CostUSD) },
		}
		return jr.Exec(ctx, job, attempt)
	}
	rec := queue.NewRecorder(s.q.store, job)
	res := s.execLive(ctx, p.r, p.task, p.preset, rec)
	err := rec.Settle(ctx)
	p.done <- res
	return err
}

// isClosed says whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
