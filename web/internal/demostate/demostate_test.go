package demostate_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/web/internal/demostate"
)

type Visit = demostate.Visit

// open opens the audit store at dsn (closed when the test ends) and the demo's state in it.
func open(t *testing.T, dsn string) (*audit.Store, *demostate.Log) {
	t.Helper()
	s, err := audit.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := demostate.Open(t.Context(), s.SQL())
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

// TestDemoLimitsSurviveReopen: the salt, the visits and the queue are read back after the store
// is closed and opened again; visits older than asked are forgotten.
func TestDemoLimitsSurviveReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, l := open(t, path)
	salt, err := l.Salt(ctx)
	if err != nil || len(salt) != 32 {
		t.Fatalf("Salt: %x, %v", salt, err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, v := range []Visit{{"a", t0, true}, {"a", t0.Add(time.Hour), true}, {"b", t0.Add(2 * time.Hour), false}} {
		if err := l.AddVisit(ctx, v); err != nil {
			t.Fatalf("AddVisit %d: %v", i, err)
		}
	}
	if err := l.AddVisit(ctx, Visit{At: t0}); err == nil {
		t.Error("AddVisit without a visitor: no error")
	}
	if err := l.Enqueue(ctx, demostate.QueuedRun{ID: "0123456789abcdef", Visitor: "a", Preset: "lookup", QueuedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := l.Enqueue(ctx, demostate.QueuedRun{ID: "fedcba9876543210", Visitor: "b", QueuedAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Dequeue(ctx, "fedcba9876543210"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, l = open(t, path)
	again, err := l.Salt(ctx)
	if err != nil || !bytes.Equal(again, salt) {
		t.Errorf("Salt after reopen: got %x, %v; want %x", again, err, salt)
	}
	vs, err := l.VisitsSince(ctx, t0.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []Visit{{"a", t0.Add(time.Hour), true}, {"b", t0.Add(2 * time.Hour), false}}
	if len(vs) != len(want) {
		t.Fatalf("VisitsSince: got %+v, want %+v", vs, want)
	}
	for i := range want {
		if vs[i].Visitor != want[i].Visitor || !vs[i].At.Equal(want[i].At) || vs[i].Live != want[i].Live {
			t.Errorf("visit %d: got %+v, want %+v", i, vs[i], want[i])
		}
	}
	if vs, _ := l.VisitsSince(ctx, t0); len(vs) != 2 {
		t.Errorf("the visit before the cut-off was kept: %+v", vs)
	}
	q, err := l.Queued(ctx)
	if err != nil || len(q) != 1 || q[0].ID != "0123456789abcdef" || q[0].Preset != "lookup" || !q[0].QueuedAt.Equal(t0) {
		t.Errorf("Queued after reopen: got %+v, %v; want the one run left", q, err)
	}
	if err := l.Enqueue(ctx, demostate.QueuedRun{ID: "no spaces", Visitor: "a", QueuedAt: t0}); err == nil {
		t.Error("Enqueue of a malformed run id: no error")
	}
}

// TestPostgres: the same state on PostgreSQL (its own dialect: the salt's table lock, the queue's
// upsert), the salt kept, a run enqueued twice queued once.
func TestPostgres(t *testing.T) {
	ctx := t.Context()
	_, l := open(t, pgtest.Start(t))
	salt, err := l.Salt(ctx)
	if err != nil || len(salt) < 16 {
		t.Fatalf("Salt: %v", err)
	}
	if again, _ := l.Salt(ctx); string(again) != string(salt) {
		t.Errorf("Salt changed")
	}
	if err := l.AddVisit(ctx, Visit{Visitor: "v1", At: time.Now(), Live: true}); err != nil {
		t.Fatal(err)
	}
	if vs, err := l.VisitsSince(ctx, time.Now().Add(-time.Hour)); err != nil || len(vs) != 1 || !vs[0].Live {
		t.Errorf("VisitsSince: %+v %v", vs, err)
	}
	for range 2 {
		if err := l.Enqueue(ctx, demostate.QueuedRun{ID: "qq", Visitor: "v1", Preset: "lookup", QueuedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if qs, err := l.Queued(ctx); err != nil || len(qs) != 1 {
		t.Errorf("Queued: %+v %v", qs, err)
	}
	if err := l.Dequeue(ctx, "qq"); err != nil {
		t.Fatal(err)
	}
	if qs, err := l.Queued(ctx); err != nil || len(qs) != 0 {
		t.Errorf("Queued after Dequeue: %+v %v", qs, err)
	}
}
