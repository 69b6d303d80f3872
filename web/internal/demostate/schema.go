package demostate

import (
	"context"
	"fmt"

	"github.com/browser-agent/browser-agent/audit"
)

// schema is the demo's tables, the salt's type left to the dialect (%[1]s: BLOB on SQLite, BYTEA
// on PostgreSQL). Every statement is IF NOT EXISTS: databases written before this package created
// its own tables got the same tables from audit's migrations (SQLite schema 4, PostgreSQL version
// 1), rows and all, and keep them. The definitions are those tables' exactly, so that a database
// is the same whichever program created its tables; a change to a table appends a statement that
// alters it, and must hold for both kinds of database.
const schema = `CREATE TABLE IF NOT EXISTS demo_salt (
	salt %[1]s NOT NULL
);
CREATE TABLE IF NOT EXISTS demo_visits (
	visitor TEXT NOT NULL,
	at      TEXT NOT NULL,
	live    INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS demo_visits_at ON demo_visits (at);
CREATE TABLE IF NOT EXISTS demo_queue (
	id        TEXT PRIMARY KEY,
	visitor   TEXT NOT NULL,
	preset    TEXT NOT NULL DEFAULT '',
	queued_at TEXT NOT NULL
);`

// pgLock is the advisory lock that serializes the creation of the tables on PostgreSQL, where two
// processes creating the same table IF NOT EXISTS at once can still collide (audit's is "ba-a",
// the queue's "ba-q").
const pgLock = 0x62612d64 // "ba-d"

// createTables creates the demo's tables in db when missing, in one transaction: on SQLite an
// immediate one, which holds the write lock, so concurrent openers take turns.
func createTables(ctx context.Context, db audit.SQL) error {
	tx, err := db.BeginTx(ctx)
	if err != nil {
		return fmt.Errorf("audit: demo tables: %w", err)
	}
	defer tx.Rollback()
	blob := "BLOB"
	if db.Postgres() {
		blob = "BYTEA"
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgLock); err != nil {
			return fmt.Errorf("audit: demo tables: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(schema, blob)); err != nil {
		return fmt.Errorf("audit: demo tables: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: demo tables: %w", err)
	}
	return nil
}
