package queue_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// BenchmarkQueue measures the run queue with real workers (the binary, each with its own
// Chromium and warm browser) and the cheapest real run (one search page of the embedded demo
// site, a scripted model): runs per minute with 1, 2 and 4 worker processes, and the latency the
// queue adds to a run (from Enqueue to the run's audit row begun, an idle worker waiting), on
// SQLite and on PostgreSQL. BENCHMARKS.md has the figures.
//
//	go test -run '^$' -bench Queue -benchtime 1x -timeout 30m ./tests/queue/
func BenchmarkQueue(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgresql"} {
		b.Run(backend, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "audit.db")
			if backend == "postgresql" {
				db = pgtest.Start(b)
			}
			for _, w := range []int{1, 2, 4} {
				b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
					for range b.N {
						throughput(b, db, w, envInt("QUEUE_BENCH_RUNS", 24))
					}
				})
			}
			b.Run("latency", func(b *testing.B) {
				for range b.N {
					latency(b, db, envInt("QUEUE_BENCH_SAMPLES", 15))
				}
			})
		})
	}
}

type bench struct {
	b      *testing.B
	db     string
	q      *queue.Queue
	store  *audit.Store
	script string
	mark   string
	procs  []*exec.Cmd
}

func newBench(b *testing.B, db string, workers int) *bench {
	ctx := context.Background()
	store, err := audit.Open(db)
	if err != nil {
		b.Fatal(err)
	}
	q, err := queue.Open(ctx, queue.Config{DB: db})
	if err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(b.TempDir(), "one-search.json")
	os.WriteFile(script, []byte(oneSearch), 0o600)
	bn := &bench{b: b, db: db, q: q, store: store, script: script, mark: fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().UnixNano())}
	for range workers {
		cmd := exec.Command(binary, "worker", "--db", db, "--workers", "1")
		cmd.Env = append(os.Environ(), markerVar+"="+bn.mark, "TMPDIR="+b.TempDir())
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		bn.procs = append(bn.procs, cmd)
	}
	return bn
}

func (bn *bench) close() {
	for _, p := range bn.procs {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	bn.q.Stop(context.Background())
	bn.store.Close()
	testutil.Eventually(60*time.Second, func() bool { return len(marked(bn.mark)) == 0 })
}

func (bn *bench) enqueue(id string) {
	if _, err := bn.q.Enqueue(context.Background(), queue.Job{RunID: id, Task: "Look up SYN-0042", Model: "script:" + bn.script}); err != nil {
		bn.b.Fatal(err)
	}
}

func (bn *bench) ended(id string) (audit.Run, bool) {
	r, _, err := bn.store.Run(context.Background(), id)
	return r, err == nil && r.Status != audit.StatusRunning
}

// warm runs one run per worker first, so that every worker has its driver up and a browser
// started in advance, as a serving deployment has.
func (bn *bench) warm(workers int) {
	var ids []string
	for i := range workers {
		id := fmt.Sprintf("warm%d-%s", i, audit.NewRunID())
		bn.enqueue(id)
		ids = append(ids, id)
	}
	for _, id := range ids {
		testutil.Eventually(3*time.Minute, func() bool { _, ok := bn.ended(id); return ok })
	}
	time.Sleep(2 * time.Second) // the next browsers start
}

func throughput(b *testing.B, db string, workers, runs int) {
	bn := newBench(b, db, workers)
	defer bn.close()
	bn.warm(workers)
	ids := make([]string, runs)
	start := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("tp%03d-%s", i, audit.NewRunID())
		bn.enqueue(ids[i])
	}
	for _, id := range ids {
		if !testutil.Eventually(10*time.Minute, func() bool { _, ok := bn.ended(id); return ok }) {
			b.Fatalf("run %s did not end", id)
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(runs)/elapsed.Minutes(), "runs/min")
	b.ReportMetric(0, "ns/op")
}

func latency(b *testing.B, db string, samples int) {
	bn := newBench(b, db, 1)
	defer bn.close()
	bn.warm(1)
	var waits []time.Duration
	for i := range samples {
		id := fmt.Sprintf("lat%03d-%s", i, audit.NewRunID())
		at := time.Now()
		bn.enqueue(id)
		var r audit.Run
		testutil.Eventually(3*time.Minute, func() bool { var ok bool; r, ok = bn.ended(id); return ok })
		waits = append(waits, r.StartedAt.Sub(at))
		time.Sleep(1500 * time.Millisecond) // the worker's next browser is started: it waits idle
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "ms-median-wait")
	b.ReportMetric(float64(waits[len(waits)*9/10].Microseconds())/1000, "ms-p90-wait")
	b.ReportMetric(0, "ns/op")
}
