// Package queue_test drives the run queue end to end: runs enqueued on River, "browser-agent
// worker" processes (the real binary, each with its own Chromium and warm browser) taking them,
// workers killed with SIGKILL at random moments, and checks that every run ended exactly once with
// a terminal audit row, that none ran twice, that the queue is empty, and that no process is left.
// It runs on the SQLite default and on a real PostgreSQL server started by the test.
package queue_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var binary string

func TestMain(m *testing.M) { os.Exit(testbrowser.RunWithBinary(m, &binary)) }

// markerVar is set in the environment of every worker a test starts; Chromium and the driver
// inherit it.
const markerVar = "BROWSER_AGENT_QUEUE_MARK"

// envInt is an integer from the environment, for running the test smaller by hand.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// oneSearch is the cheapest real run: one search page of the embedded demo site, then the model
// gives up. A script, so that every run does the same browser work.
const oneSearch = `{"steps": [{"call": "search_site", "args": {"query": "SYN-0042"}}, {"final": {"cannot_answer": "one page only"}}]}`

// killTest enqueues the runs, starts the workers on db, kills workers at random and checks the
// outcome. open opens the audit store of db.
func killTest(t *testing.T, db string, open func() (*audit.Store, error)) {
	runs := envInt("QUEUE_TEST_RUNS", 200)
	workers := envInt("QUEUE_TEST_WORKERS", 4)
	kills := envInt("QUEUE_TEST_KILLS", 6)
	seed := uint64(envInt("QUEUE_TEST_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("%d runs, %d workers, %d kills, seed %d (QUEUE_TEST_SEED)", runs, workers, kills, seed)
	rng := rand.New(rand.NewPCG(seed, 29))
	ctx := context.Background()
	begun := time.Now()

	store, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	q, err := queue.Open(ctx, queue.Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)
	script := filepath.Join(t.TempDir(), "one-search.json")
	if err := os.WriteFile(script, []byte(oneSearch), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("q%03d-%s", i, audit.NewRunID())
		if _, err := q.Enqueue(ctx, queue.Job{RunID: ids[i], Task: "Look up SYN-0042", Model: "script:" + script}); err != nil {
			t.Fatal(err)
		}
	}

	mark := fmt.Sprintf("q%d-%d", os.Getpid(), rng.Uint32())
	var mu sync.Mutex
	var logs []*testutil.Buffer
	start := func(n int) *exec.Cmd {
		cmd := exec.Command(binary, "worker", "--db", db, "--workers", "1", "--run-timeout", "15s", "--rescue-after", "26s", "--drain", "5s")
		cmd.Env = append(os.Environ(), markerVar+"="+mark, "TMPDIR="+t.TempDir())
		var stderr testutil.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		mu.Lock()
		logs = append(logs, &stderr)
		mu.Unlock()
		return cmd
	}
	pool := make([]*exec.Cmd, workers)
	for i := range pool {
		pool[i] = start(i)
	}
	finished := func() int {
		all, err := store.Runs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range all {
			if r.Status != audit.StatusRunning {
				n++
			}
		}
		return n
	}
	// Kill a worker at a random moment while runs are under way, and start another in its place.
	killed := 0
	for k := range kills {
		target := (k + 1) * runs / (kills + 2) // spread over the runs
		testutil.Eventually(5*time.Minute, func() bool { return finished() >= target })
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		i := rng.IntN(workers)
		if err := pool[i].Process.Signal(syscall.SIGKILL); err == nil {
			killed++
		}
		pool[i] = start(workers + k)
	}
	// Every run ends; the queue empties (the killed workers' jobs are rescued by River and closed).
	done := testutil.Eventually(10*time.Minute, func() bool {
		waiting, running, err := q.Waiting(ctx)
		return err == nil && waiting == 0 && running == 0 && finished() == runs
	})
	elapsed := time.Since(begun)
	for _, w := range pool {
		w.Process.Signal(syscall.SIGTERM)
	}
	if !done {
		waiting, running, _ := q.Waiting(ctx)
		t.Errorf("not done: %d of %d runs ended, %d jobs waiting, %d taken", finished(), runs, waiting, running)
	}

	// Each run: one row, terminal; its steps numbered once (a run executed twice would record
	// step 1 twice).
	counts := map[string]int{}
	for _, id := range ids {
		r, steps, err := store.Run(ctx, id)
		if err != nil {
			t.Errorf("run %s: %v", id, err)
			continue
		}
		counts[r.Status]++
		if r.Status == audit.StatusRunning || r.FinishedAt.IsZero() {
			t.Errorf("run %s: status %q, finished %v: not ended", id, r.Status, r.FinishedAt)
		}
		if r.Status == audit.StatusInterrupted && !strings.HasPrefix(r.Reason, audit.ReasonCrashed) {
			t.Errorf("run %s: interrupted with reason %q, want a crash reason", id, r.Reason)
		}
		seen := map[int]bool{}
		for _, st := range steps {
			if st.Tool == "request" {
				continue
			}
			if seen[st.N] {
				t.Errorf("run %s: step %d recorded twice: the run was executed twice", id, st.N)
			}
			seen[st.N] = true
		}
	}
	// Each worker says "run ID: taking its browser" when a run starts to execute, whatever its
	// audit row says, and "run ID: STATUS" when it ended one: no ID twice.
	executed, browsers := map[string]int{}, map[string]int{}
	again := 0
	ended := regexp.MustCompile(`(?m)^run (\S+): (\S+)$`)
	launched := regexp.MustCompile(`(?m)^run (\S+): taking its browser$`)
	mu.Lock()
	for _, l := range logs {
		for _, m := range ended.FindAllStringSubmatch(l.String(), -1) {
			executed[m[1]]++
		}
		for _, m := range launched.FindAllStringSubmatch(l.String(), -1) {
			browsers[m[1]]++
		}
		again += strings.Count(l.String(), "begun by an earlier attempt")
	}
	mu.Unlock()
	for id, n := range executed {
		if n > 1 {
			t.Errorf("run %s: ended by a worker %d times", id, n)
		}
	}
	for id, n := range browsers {
		if n > 1 {
			t.Errorf("run %s: executed %d times (it took a browser %d times)", id, n, n)
		}
	}
	if len(executed) > runs {
		t.Errorf("%d runs executed, %d enqueued", len(executed), runs)
	}
	t.Logf("outcomes: %v; %d workers killed; %d runs executed, %d to their end by a worker; %d job attempts found their run begun before; all ended in %v",
		counts, killed, len(browsers), len(executed), again, elapsed.Round(time.Second))

	// No worker, Chromium or driver is left.
	if !testutil.Eventually(60*time.Second, func() bool { return len(marked(mark)) == 0 }) {
		for _, p := range marked(mark) {
			t.Errorf("left behind: pid %d: %.200s", p.pid, p.cmd)
		}
	}
	if t.Failed() {
		mu.Lock()
		for i, l := range logs {
			t.Logf("worker %d stderr (tail):\n%s", i, tail(l.String(), 1500))
		}
		mu.Unlock()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestKilledWorkersSQLite is the embedded default: the queue and the audit in one SQLite file.
func TestKilledWorkersSQLite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	killTest(t, db, func() (*audit.Store, error) { return audit.Open(db) })
}

// TestKilledWorkersPostgres is the outgrown shape: the queue (riverpgxv5) and the audit in one
// PostgreSQL database, a real server started by the test.
func TestKilledWorkersPostgres(t *testing.T) {
	url := pgtest.Start(t)
	killTest(t, url, func() (*audit.Store, error) { return audit.Open(url) })
}

// proc is a live process found with the marker.
type proc struct {
	pid int
	cmd string
}

// marked lists the live processes (zombies excluded) whose environment holds markerVar=mark.
func marked(mark string) []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	needle := []byte(markerVar + "=" + mark + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, needle...)) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if j := bytes.LastIndexByte(stat, ')'); j >= 0 && len(stat) > j+2 && (stat[j+2] == 'Z' || stat[j+2] == 'X') {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, proc{pid: pid, cmd: strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}
