package demostate_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/web/internal/demostate"
)

// dialects are the two kinds of audit database, each as a new empty one for a test.
var dialects = []struct {
	name string
	dsn  func(t *testing.T) string
	blob string // the salt's column type in audit's old migrations
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.db") }, "BLOB"},
	{"postgres", func(t *testing.T) string { return pgtest.Start(t) }, "BYTEA"},
}

// oldTables is how audit's migrations created the demo's tables before the demo created them
// itself (SQLite schema 4, PostgreSQL version 1), as databases of those versions hold them; blob
// is the salt's type.
func oldTables(blob string) []string {
	return []string{
		"CREATE TABLE demo_salt (salt " + blob + " NOT NULL)",
		"CREATE TABLE demo_visits (visitor TEXT NOT NULL, at TEXT NOT NULL, live INTEGER NOT NULL DEFAULT 1)",
		"CREATE INDEX demo_visits_at ON demo_visits (at)",
		"CREATE TABLE demo_queue (id TEXT PRIMARY KEY, visitor TEXT NOT NULL, preset TEXT NOT NULL DEFAULT '', queued_at TEXT NOT NULL)",
	}
}

// describe lists the demo's tables in db: each column with its type, nullability, default and
// key, and each index, one line each in a fixed order.
func describe(t *testing.T, db audit.SQL) []string {
	t.Helper()
	qs := []string{
		`SELECT m.name || ' ' || p.name || ' ' || p.type || ' ' || p."notnull" || ' ' || COALESCE(p.dflt_value, '-') || ' ' || p.pk
			FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name LIKE 'demo%' ORDER BY m.name, p.cid`,
		`SELECT tbl_name || ' ' || name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'demo%' ORDER BY name`,
	}
	if db.Postgres() {
		qs = []string{
			`SELECT table_name || ' ' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '-')
				FROM information_schema.columns WHERE table_schema = 'public' AND table_name LIKE 'demo%' ORDER BY table_name, ordinal_position`,
			`SELECT tablename || ' ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename LIKE 'demo%' ORDER BY indexname`,
		}
	}
	var out []string
	for _, q := range qs {
		rows, err := db.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestOpensOldDatabase: a database whose demo tables audit's migrations created, with rows in
// them, opens under this program (the audit store and the demo's state) with its rows, and its
// tables are those a new database gets when the demo opens it.
func TestOpensOldDatabase(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			dsn := d.dsn(t)
			s, err := audit.Open(dsn)
			if err != nil {
				t.Fatal(err)
			}
			db := s.SQL()
			if got := describe(t, db); len(got) != 0 {
				t.Fatalf("a new audit store holds demo tables: %q", got)
			}
			for _, q := range oldTables(d.blob) {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			old := describe(t, db)
			salt := bytes.Repeat([]byte{7}, 32)
			at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{"INSERT INTO demo_salt (salt) VALUES (?)", []any{salt}},
				{"INSERT INTO demo_visits (visitor, at, live) VALUES (?, ?, ?)", []any{"v1", audit.FormatTime(at), 0}},
				{"INSERT INTO demo_queue (id, visitor, preset, queued_at) VALUES (?, ?, ?, ?)", []any{"q1", "v1", "lookup", audit.FormatTime(at)}},
			} {
				if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()

			_, l := open(t, dsn)
			if got, err := l.Salt(ctx); err != nil || !bytes.Equal(got, salt) {
				t.Errorf("Salt: got %x, %v; want the old one %x", got, err, salt)
			}
			if vs, err := l.VisitsSince(ctx, at); err != nil || len(vs) != 1 || vs[0].Visitor != "v1" || vs[0].Live || !vs[0].At.Equal(at) {
				t.Errorf("VisitsSince: got %+v, %v; want the old visit", vs, err)
			}
			if qs, err := l.Queued(ctx); err != nil || len(qs) != 1 || qs[0].ID != "q1" || qs[0].Preset != "lookup" {
				t.Errorf("Queued: got %+v, %v; want the old run", qs, err)
			}

			s2, _ := open(t, d.dsn(t))
			if fresh := describe(t, s2.SQL()); fmt.Sprint(fresh) != fmt.Sprint(old) {
				t.Errorf("the demo's tables:\n\tnew database %q\n\told database %q", fresh, old)
			}
		})
	}
}

// TestOpenConcurrently: processes starting together on a new database all open the demo's state
// (on PostgreSQL, two creations of one table IF NOT EXISTS at once can collide).
func TestOpenConcurrently(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s, err := audit.Open(d.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var wg sync.WaitGroup
			errs := make([]error, 32)
			for i := range errs {
				wg.Go(func() { _, errs[i] = demostate.Open(t.Context(), s.SQL()) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Open %d: %v", i, err)
				}
			}
		})
	}
}
