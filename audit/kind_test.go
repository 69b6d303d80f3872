package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// A database written before runs had a kind opens with every old run of kind "run", and an MCP
// run keeps its kind and client.
func TestRunKind(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	// A version-2 database, as the previous program left it.
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if _, err := raw.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(`PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO runs (id, started_at, status) VALUES ('old', '2025-01-01T00:00:00.000000000Z', 'answered')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, _, err := s.Run(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if old.Kind != KindRun || old.Client != "" {
		t.Errorf("old run:\n\tgot  kind %q client %q\n\twant kind %q client \"\"", old.Kind, old.Client, KindRun)
	}
	id, err := s.BeginRun(ctx, Run{Model: "mcp:x", Kind: KindMCP, Client: "claude-code 1.2.3?token=abc"})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindMCP || r.Client != "claude-code 1.2.3" {
		t.Errorf("mcp run:\n\tgot  kind %q client %q\n\twant kind %q client %q (cut at '?')", r.Kind, r.Client, KindMCP, "claude-code 1.2.3")
	}
	id2, err := s.BeginRun(ctx, Run{Model: "offline"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := s.Run(ctx, id2); r.Kind != KindRun {
		t.Errorf("run without a kind:\n\tgot  %q\n\twant %q", r.Kind, KindRun)
	}
}
