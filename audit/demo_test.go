package audit

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"
)

// TestDemoLimitsSurviveReopen: the salt, the visits and the queue are read back after the store
// is closed and opened again; visits older than asked are forgotten.
func TestDemoLimitsSurviveReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	salt, err := s.DemoSalt(ctx)
	if err != nil || len(salt) != 32 {
		t.Fatalf("DemoSalt: %x, %v", salt, err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, v := range []Visit{{"a", t0, true}, {"a", t0.Add(time.Hour), true}, {"b", t0.Add(2 * time.Hour), false}} {
		if err := s.AddVisit(ctx, v); err != nil {
			t.Fatalf("AddVisit %d: %v", i, err)
		}
	}
	if err := s.AddVisit(ctx, Visit{At: t0}); err == nil {
		t.Error("AddVisit without a visitor: no error")
	}
	if err := s.Enqueue(ctx, QueuedRun{ID: "0123456789abcdef", Visitor: "a", Preset: "lookup", QueuedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(ctx, QueuedRun{ID: "fedcba9876543210", Visitor: "b", QueuedAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Dequeue(ctx, "fedcba9876543210"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again, err := s.DemoSalt(ctx)
	if err != nil || !bytes.Equal(again, salt) {
		t.Errorf("DemoSalt after reopen: got %x, %v; want %x", again, err, salt)
	}
	vs, err := s.VisitsSince(ctx, t0.Add(30*time.Minute))
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
	if vs, _ := s.VisitsSince(ctx, t0); len(vs) != 2 {
		t.Errorf("the visit before the cut-off was kept: %+v", vs)
	}
	q, err := s.Queued(ctx)
	if err != nil || len(q) != 1 || q[0].ID != "0123456789abcdef" || q[0].Preset != "lookup" || !q[0].QueuedAt.Equal(t0) {
		t.Errorf("Queued after reopen: got %+v, %v; want the one run left", q, err)
	}
}
