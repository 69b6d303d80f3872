package demostate

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/policy"
)

// Log is the demo's state in the audit database db.
type Log struct{ db audit.SQL }

// Open returns the demo's state kept in db (audit.Store.SQL), creating its tables there when
// missing: the audit store creates only its own, so a database that only runs and workers used
// has none until the demo opens it.
func Open(ctx context.Context, db audit.SQL) (*Log, error) {
	if err := createTables(ctx, db); err != nil {
		return nil, err
	}
	return &Log{db: db}, nil
}

// Salt returns the database's random salt for visitor hashes, creating it on first use.
func (l *Log) Salt(ctx context.Context) ([]byte, error) {
	var salt []byte
	err := l.db.QueryRowContext(ctx, "SELECT salt FROM demo_salt LIMIT 1").Scan(&salt)
	if err == nil && len(salt) >= 16 {
		return salt, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	tx, err := l.db.BeginTx(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	defer tx.Rollback()
	if l.db.Postgres() { // SQLite's immediate transaction holds the write lock; PostgreSQL's takes it here
		if _, err := tx.ExecContext(ctx, "LOCK TABLE demo_salt IN EXCLUSIVE MODE"); err != nil {
			return nil, fmt.Errorf("audit: demo salt: %w", err)
		}
	}
	// Another process may have written one since the read: the transaction holds the write lock.
	if err := tx.QueryRowContext(ctx, "SELECT salt FROM demo_salt LIMIT 1").Scan(&salt); err == nil && len(salt) >= 16 {
		return salt, nil
	}
	salt = make([]byte, 32)
	rand.Read(salt)
	if _, err := tx.ExecContext(ctx, "DELETE FROM demo_salt"); err != nil {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO demo_salt (salt) VALUES (?)", salt); err != nil {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	return salt, nil
}

// Visit is one run a visitor started: live, or a recorded run played instead.
type Visit struct {
	Visitor string // the visitor's hash
	At      time.Time
	Live    bool
}

// AddVisit records that a visitor started a run.
func (l *Log) AddVisit(ctx context.Context, v Visit) error {
	if v.Visitor == "" || len(v.Visitor) > 128 {
		return fmt.Errorf("audit: add visit: visitor must be 1 to 128 bytes: %w", audit.ErrInvalid)
	}
	live := 0
	if v.Live {
		live = 1
	}
	_, err := l.db.ExecContext(ctx, "INSERT INTO demo_visits (visitor, at, live) VALUES (?, ?, ?)", v.Visitor, audit.FormatTime(v.At), live)
	if err != nil {
		return fmt.Errorf("audit: add visit: %w", err)
	}
	return nil
}

// VisitsSince returns the visits at or after since, oldest first, and forgets older ones.
func (l *Log) VisitsSince(ctx context.Context, since time.Time) ([]Visit, error) {
	if _, err := l.db.ExecContext(ctx, "DELETE FROM demo_visits WHERE at < ?", audit.FormatTime(since)); err != nil {
		return nil, fmt.Errorf("audit: visits: %w", err)
	}
	return query(ctx, l.db, "audit: visits", "SELECT visitor, at, live FROM demo_visits WHERE at >= ? ORDER BY at",
		[]any{audit.FormatTime(since)}, func(rows *sql.Rows, v *Visit, at *string) error { return rows.Scan(&v.Visitor, at, &v.Live) },
		func(v *Visit, at time.Time) { v.At = at })
}

// QueuedRun is a run waiting for the live slot.
type QueuedRun struct {
	ID       string
	Visitor  string
	Preset   string
	QueuedAt time.Time
}

// Enqueue records a run waiting for the live slot.
func (l *Log) Enqueue(ctx context.Context, q QueuedRun) error {
	if err := audit.CheckRunID(q.ID); err != nil {
		return fmt.Errorf("audit: enqueue: %w", err)
	}
	q2 := "INSERT OR REPLACE INTO demo_queue (id, visitor, preset, queued_at) VALUES (?, ?, ?, ?)"
	if l.db.Postgres() {
		q2 = `INSERT INTO demo_queue (id, visitor, preset, queued_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET visitor = EXCLUDED.visitor, preset = EXCLUDED.preset, queued_at = EXCLUDED.queued_at`
	}
	_, err := l.db.ExecContext(ctx, q2,
		q.ID, q.Visitor, policy.Cut(q.Preset, 64), audit.FormatTime(q.QueuedAt))
	if err != nil {
		return fmt.Errorf("audit: enqueue %s: %w", q.ID, err)
	}
	return nil
}

// Dequeue records that a run left the queue (it started, or ended without starting).
func (l *Log) Dequeue(ctx context.Context, id string) error {
	if _, err := l.db.ExecContext(ctx, "DELETE FROM demo_queue WHERE id = ?", id); err != nil {
		return fmt.Errorf("audit: dequeue %s: %w", id, err)
	}
	return nil
}

// Queued returns the runs in the queue, oldest first.
func (l *Log) Queued(ctx context.Context) ([]QueuedRun, error) {
	return query(ctx, l.db, "audit: queue", "SELECT id, visitor, preset, queued_at FROM demo_queue ORDER BY queued_at",
		nil, func(rows *sql.Rows, q *QueuedRun, at *string) error {
			return rows.Scan(&q.ID, &q.Visitor, &q.Preset, at)
		},
		func(q *QueuedRun, at time.Time) { q.QueuedAt = at })
}

// query reads the rows of a demo table, each with one time column: scan reads a row's columns
// (the time as text), setTime sets the parsed time. Errors are prefixed with op.
func query[T any](ctx context.Context, db audit.SQL, op, q string, args []any,
	scan func(*sql.Rows, *T, *string) error, setTime func(*T, time.Time)) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var r T
		var at string
		if err := scan(rows, &r, &at); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		t, err := audit.ParseTime(at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		setTime(&r, t)
		out = append(out, r)
	}
	return out, rows.Err()
}
