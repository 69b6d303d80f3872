package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/policy"
)

// TestPostgresStore runs the Store's API against a real PostgreSQL server: the same rows read
// back as from SQLite, the once-only begin and end the queue relies on, and the ledger (the
// demo's visit log is tested in web/internal/demostate).
func TestPostgresStore(t *testing.T) {
	url := pgtest.Start(t)
	ctx := context.Background()
	s, err := audit.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !audit.IsPostgres(s.Path()) {
		t.Errorf("Path() = %q", s.Path())
	}
	if got := audit.RedactURL("postgres://u:secret@h/db"); got != "postgres://u:***@h/db" {
		t.Errorf("RedactURL = %q", got)
	}
	// A second opener finds the schema current.
	s2, err := audit.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()

	id, err := s.BeginRun(ctx, audit.Run{RecordID: "SYN-0042", Preset: "lookup", Model: "offline", Simulated: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginRun(ctx, audit.Run{ID: id}); !errors.Is(err, audit.ErrStarted) {
		t.Errorf("second BeginRun: %v, want ErrStarted", err)
	}
	step := audit.Step{RunID: id, Tool: "open_url", URL: "http://127.0.0.1:8081/records/SYN-0042?q=secret#f",
		Entry: policy.Entry{N: 1, Verdict: policy.Allow, Rule: "read", Reason: "ok", Layer: policy.LayerPolicy}, Duration: 15 * time.Millisecond, BytesReturned: 10}
	if err := s.AddStep(ctx, step); err != nil {
		t.Fatal(err)
	}
	if err := s.AddStep(ctx, audit.Step{RunID: "nope", Entry: policy.Entry{Layer: policy.LayerPolicy}}); !errors.Is(err, audit.ErrNotFound) {
		t.Errorf("step of a missing run: %v, want ErrNotFound", err)
	}
	end := audit.Run{ID: id, Status: "answered", Reason: "done", StepCount: 1, PromptTokens: 3, ModelTurns: 2, CostUSD: 0.25}
	if err := s.FinishRunOnce(ctx, end); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRunOnce(ctx, end); !errors.Is(err, audit.ErrEnded) {
		t.Errorf("second FinishRunOnce: %v, want ErrEnded", err)
	}
	if ended, err := s.InterruptRun(ctx, id, "crashed: x"); err != nil || ended {
		t.Errorf("InterruptRun of an ended run: %v %v", ended, err)
	}
	r, steps, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "answered" || !r.Simulated || r.CostUSD != 0.25 || r.ModelTurns != 2 || r.PromptTokens != 3 || r.FinishedAt.IsZero() || len(steps) != 1 {
		t.Errorf("run read back: %+v, %d steps", r, len(steps))
	}
	if steps[0].Path != "/records/SYN-0042" || steps[0].Origin != "http://127.0.0.1:8081" || steps[0].Duration != 15*time.Millisecond {
		t.Errorf("step read back: %+v", steps[0])
	}
	// A running run is interrupted once, at its last step's time.
	id2, _ := s.BeginRun(ctx, audit.Run{RecordID: "SYN-0001"})
	if ended, err := s.InterruptRun(ctx, id2, "crashed: worker gone"); err != nil || !ended {
		t.Errorf("InterruptRun: %v %v", ended, err)
	}
	if all, err := s.Runs(ctx, 0); err != nil || len(all) != 2 {
		t.Errorf("Runs: %d %v", len(all), err)
	}
	// Ledger and visit log.
	day := audit.Day(time.Now())
	s.AddSpend(ctx, day, 0.5)
	s.AddSpend(ctx, day, 0.25)
	if got, err := s.SpendOn(ctx, day); err != nil || got != 0.75 {
		t.Errorf("SpendOn = %v %v", got, err)
	}
	rep, err := s.Check(ctx)
	if err != nil || !rep.OK() {
		t.Errorf("Check: %+v %v", rep, err)
	}
}
