package audit

import (
	"context"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/policy"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// deadPID returns the pid of a process that has ended and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRecoverCrashed(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	me := os.Getpid()
	dead := deadPID(t)
	runs := []Run{
		{ID: "dead-with-steps", PID: dead, ProcStart: "boot:1"},
		{ID: "dead-no-steps", PID: dead, ProcStart: "boot:1"},
		{ID: "pid-reused", PID: me, ProcStart: ProcessMarker(me) + "0"}, // same pid, another start
		{ID: "alive", PID: me, ProcStart: ProcessMarker(me)},
		{ID: "finished", PID: dead, ProcStart: "boot:1"},
		{ID: "before-schema-3"}, // BeginRun fills in this process; cleared below
	}
	for _, r := range runs {
		if _, err := s.BeginRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec("UPDATE runs SET pid = 0, proc_start = '' WHERE id = 'before-schema-3'"); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if err := s.AddStep(ctx, Step{RunID: "dead-with-steps", Tool: "open", Entry: policy.Entry{N: n, Layer: policy.LayerPolicy}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddStep(ctx, Step{RunID: "dead-with-steps", Tool: "request", Entry: policy.Entry{N: 2, Layer: policy.LayerProxy}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, Run{ID: "finished", Status: "answered"}); err != nil {
		t.Fatal(err)
	}
	_, steps, _ := s.Run(ctx, "dead-with-steps")
	lastStep := steps[len(steps)-1].RecordedAt
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(path) // recovers
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	want := map[string]struct {
		status, reason string
		steps          int
	}{
		"dead-with-steps": {StatusInterrupted, fmt.Sprintf("crashed: process %d ended before the run's end was recorded", dead), 2},
		"dead-no-steps":   {StatusInterrupted, fmt.Sprintf("crashed: process %d ended before the run's end was recorded", dead), 0},
		"pid-reused":      {StatusInterrupted, fmt.Sprintf("crashed: process %d ended before the run's end was recorded", me), 0},
		"alive":           {StatusRunning, "", 0},
		"finished":        {"answered", "", 0},
		"before-schema-3": {StatusInterrupted, "crashed: the process that ran it ended before the run's end was recorded", 0},
	}
	for id, w := range want {
		r, _, err := s2.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != w.status || r.Reason != w.reason || r.StepCount != w.steps {
			t.Errorf("run %s:\n\tgot  %s %q steps %d\n\twant %s %q steps %d", id, r.Status, r.Reason, r.StepCount, w.status, w.reason, w.steps)
		}
		switch {
		case id == "dead-with-steps" && !r.FinishedAt.Equal(lastStep):
			t.Errorf("run %s finished_at:\n\tgot  %v\n\twant %v (its last step)", id, r.FinishedAt, lastStep)
		case id == "dead-no-steps" && !r.FinishedAt.Equal(r.StartedAt):
			t.Errorf("run %s finished_at:\n\tgot  %v\n\twant %v (its start)", id, r.FinishedAt, r.StartedAt)
		case id == "alive" && !r.FinishedAt.IsZero():
			t.Errorf("run %s finished_at:\n\tgot  %v\n\twant none", id, r.FinishedAt)
		}
	}

	rep, err := s2.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Integrity) != 1 || rep.Integrity[0] != "ok" || len(rep.Open) != 1 || rep.Open[0].ID != "alive" || !rep.Alive[0] || !rep.OK() {
		t.Errorf("Check:\n\tgot  %+v\n\twant integrity ok, one open run \"alive\", alive", rep)
	}
}

func TestCheckReportsDeadOpenRun(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	if _, err := s.BeginRun(ctx, Run{ID: "gone", PID: deadPID(t), ProcStart: "x:1"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.Open) != 1 || rep.Alive[0] {
		t.Errorf("Check:\n\tgot  %+v (OK %v)\n\twant one open run, not alive, not OK", rep, rep.OK())
	}
}

func TestProcessMarker(t *testing.T) {
	me := ProcessMarker(os.Getpid())
	if me == "" || me != ProcessMarker(os.Getpid()) {
		t.Fatalf("ProcessMarker(self):\n\tgot  %q, then %q\n\twant the same non-empty marker", me, ProcessMarker(os.Getpid()))
	}
	if !processAlive(os.Getpid(), me) {
		t.Errorf("processAlive(self): got false")
	}
	if processAlive(deadPID(t), me) {
		t.Errorf("processAlive(reaped child): got true")
	}
	// A zombie is not alive.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	m := ProcessMarker(cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(cmd.Process.Pid, m) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(cmd.Process.Pid, m) {
		t.Errorf("processAlive(zombie): got true")
	}
}

func TestWriteErrorFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := testutil.SmallDisk(t, 256<<10)
	path := filepath.Join(dir, "audit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := begin(t, s)
	testutil.FillDisk(t, dir)
	long := strings.Repeat("r", MaxReasonLen)
	var werr error
	for i := 0; i < 10000 && werr == nil; i++ { // the WAL grows until the disk refuses
		werr = s.AddStep(ctx, Step{RunID: id, Tool: "open", Entry: policy.Entry{N: i, Layer: policy.LayerPolicy, Reason: long, Rule: long}})
	}
	var we *WriteError
	if !errors.As(werr, &we) || !errors.Is(werr, ErrUnwritable) {
		t.Fatalf("AddStep on a full disk:\n\tgot  %v\n\twant a *WriteError", werr)
	}
	if got, want := werr.Error(), path+": disk full; free space on its disk or give another --db"; got != want {
		t.Errorf("error:\n\tgot  %q\n\twant %q", got, want)
	}
}

func TestWriteErrorReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	testutil.ReadOnly(t, path)
	_, err = Open(path)
	var we *WriteError
	if !errors.As(err, &we) {
		t.Fatalf("Open(read-only file):\n\tgot  %v\n\twant a *WriteError", err)
	}
	if got, want := err.Error(), path+": read-only; make it writable or give another --db"; got != want {
		t.Errorf("error:\n\tgot  %q\n\twant %q", got, want)
	}
}
