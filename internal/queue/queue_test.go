package queue_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// openStore opens an audit store in a file of its own (closed when the test ends) and returns
// it and the file's path.
func openStore(t *testing.T) (*audit.Store, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "audit.db")
	store, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, db
}

// TestRecorderOnce: the first attempt begins the run's row; an attempt after it cannot begin it
// (audit.ErrStarted), ends it interrupted if it is still running, and leaves an ended run as it is.
func TestRecorderOnce(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	job := queue.Job{RunID: "run-once-1"}
	first := queue.NewRecorder(store, job)
	if id, err := first.BeginRun(ctx, audit.Run{ID: "ignored", RecordID: "SYN-0042"}); err != nil || id != job.RunID {
		t.Fatalf("first BeginRun: %q %v", id, err)
	}
	// The first attempt's worker dies here; River hands the job out again.
	again := queue.NewRecorder(store, job)
	if _, err := again.BeginRun(ctx, audit.Run{}); !errors.Is(err, audit.ErrStarted) {
		t.Fatalf("second BeginRun: %v, want ErrStarted", err)
	}
	if again.Ran() || !again.Again() || !first.Ran() {
		t.Errorf("Ran/Again: first %v, again %v/%v", first.Ran(), again.Ran(), again.Again())
	}
	if err := again.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	r, _, err := store.Run(ctx, job.RunID)
	if err != nil || r.Status != audit.StatusInterrupted || r.Reason != queue.ReasonRescued {
		t.Fatalf("after the rescue: %+v %v", r, err)
	}
	// The first attempt, had it lived on, cannot end the run a second time.
	if err := first.FinishRun(ctx, audit.Run{ID: job.RunID, Status: "answered"}); !errors.Is(err, audit.ErrEnded) {
		t.Errorf("FinishRun after the rescue: %v, want ErrEnded", err)
	}
	if r2, _, _ := store.Run(ctx, job.RunID); r2.Status != audit.StatusInterrupted {
		t.Errorf("status changed to %q", r2.Status)
	}
	// A run that ended normally stays as it ended.
	job2 := queue.Job{RunID: "run-once-2"}
	a := queue.NewRecorder(store, job2)
	a.BeginRun(ctx, audit.Run{})
	if err := a.FinishRun(ctx, audit.Run{ID: job2.RunID, Status: "answered"}); err != nil {
		t.Fatal(err)
	}
	b := queue.NewRecorder(store, job2)
	b.BeginRun(ctx, audit.Run{})
	b.Settle(ctx)
	if r, _, _ := store.Run(ctx, job2.RunID); r.Status != "answered" {
		t.Errorf("an ended run's status changed to %q", r.Status)
	}
}

// TestQueueWorksEachJob: on the SQLite file, every enqueued job is worked once by the workers
// of an embedded queue, and Stop waits for them.
func TestQueueWorksEachJob(t *testing.T) {
	ctx := context.Background()
	_, db := openStore(t) // the audit file the queue shares, as in serve
	var mu sync.Mutex
	seen := map[string]int{}
	q, err := queue.Open(ctx, queue.Config{DB: db, Workers: 3, RunTimeout: time.Minute, Exec: func(ctx context.Context, j queue.Job, attempt int) error {
		mu.Lock()
		seen[j.RunID]++
		mu.Unlock()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if _, err := q.Enqueue(ctx, queue.Job{RunID: audit.NewRunID(), Task: "Look up SYN-0042", Preset: "", Model: "offline"}); err != nil {
			t.Fatal(i, err)
		}
	}
	if !testutil.Eventually(30*time.Second, func() bool {
		w, r, err := q.Waiting(ctx)
		mu.Lock()
		defer mu.Unlock()
		return err == nil && w == 0 && r == 0 && len(seen) == n
	}) {
		t.Fatalf("worked %d of %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %s worked %d times", id, c)
		}
	}
	if _, err := q.Enqueue(ctx, queue.Job{}); err == nil {
		t.Errorf("a job without a run id was enqueued")
	}
	if err := q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.Open(ctx, queue.Config{DB: db, RunTimeout: time.Minute, RescueAfter: time.Minute}); err == nil {
		t.Errorf("a rescue sooner than the run timeout + slack was accepted")
	}
}

// TestExpiredJob: a job taken past its NotAfter is not run; its row is begun and ended
// interrupted once, and a run begun before is left to Settle's rule.
func TestExpiredJob(t *testing.T) {
	ctx := context.Background()
	store, _ := openStore(t)
	job := queue.Job{RunID: "expired-1", Preset: "lookup", NotAfter: time.Now().Add(-time.Second)}
	if !job.Expired(time.Now()) || (queue.Job{}).Expired(time.Now()) {
		t.Fatalf("Expired wrong")
	}
	if err := queue.Expire(ctx, store, job); err != nil {
		t.Fatal(err)
	}
	r, _, err := store.Run(ctx, job.RunID)
	if err != nil || r.Status != audit.StatusInterrupted || r.Reason != queue.ReasonExpired || r.FinishedAt.IsZero() {
		t.Fatalf("expired run: %+v %v", r, err)
	}
	// Handed out again: nothing changes.
	if err := queue.Expire(ctx, store, job); err != nil {
		t.Fatal(err)
	}
	if r2, _, _ := store.Run(ctx, job.RunID); r2.Reason != queue.ReasonExpired || !r2.FinishedAt.Equal(r.FinishedAt) {
		t.Errorf("second Expire changed the row: %+v", r2)
	}
}

// TestOpenAtOnce: serve and workers started at once on one SQLite file each run River's
// migrations; all must open the queue (once, one of them failed with "table river_job already
// exists": River reads the applied versions before its transaction takes the write lock). Each
// Open here has its own connection, as a process of its own would.
func TestOpenAtOnce(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		_, db := openStore(t)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				q, err := queue.Open(ctx, queue.Config{DB: db})
				if err == nil {
					q.Stop(ctx)
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, open %d of %d at once: %v", round, i, n, err)
			}
		}
	}
}
