package audit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/policy"
	"time"
)

// The live demo's limits kept across restarts (schema 4). Visitors are keyed by the caller's hash
// (see DemoSalt), never by address.

// DemoSalt returns the database's random salt for visitor hashes, creating it on first use.
func (s *Store) DemoSalt(ctx context.Context) ([]byte, error) {
	var salt []byte
	err := s.db.QueryRowContext(ctx, "SELECT salt FROM demo_salt LIMIT 1").Scan(&salt)
	if err == nil && len(salt) >= 16 {
		return salt, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("audit: demo salt: %w", err)
	}
	defer tx.Rollback()
	if s.db.pg { // SQLite's immediate transaction holds the write lock; PostgreSQL's takes it here
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
func (s *Store) AddVisit(ctx context.Context, v Visit) error {
	if v.Visitor == "" || len(v.Visitor) > 128 {
		return fmt.Errorf("audit: add visit: visitor must be 1 to 128 bytes: %w", ErrInvalid)
	}
	_, err := s.db.ExecContext(ctx, "INSERT INTO demo_visits (visitor, at, live) VALUES (?, ?, ?)", v.Visitor, formatTime(v.At), boolInt(v.Live))
	if err != nil {
		return fmt.Errorf("audit: add visit: %w", err)
	}
	return nil
}

// VisitsSince returns the visits at or after since, oldest first, and forgets older ones.
func (s *Store) VisitsSince(ctx context.Context, since time.Time) ([]Visit, error) {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM demo_visits WHERE at < ?", formatTime(since)); err != nil {
		return nil, fmt.Errorf("audit: visits: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT visitor, at, live FROM demo_visits WHERE at >= ? ORDER BY at", formatTime(since))
	if err != nil {
		return nil, fmt.Errorf("audit: visits: %w", err)
	}
	defer rows.Close()
	var out []Visit
	for rows.Next() {
		var v Visit
		var at string
		if err := rows.Scan(&v.Visitor, &at, &v.Live); err != nil {
			return nil, fmt.Errorf("audit: visits: %w", err)
		}
		if v.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("audit: visits: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// QueuedRun is a run waiting for the live slot.
type QueuedRun struct {
	ID       string
	Visitor  string
	Preset   string
	QueuedAt time.Time
}

// Enqueue records a run waiting for the live slot.
func (s *Store) Enqueue(ctx context.Context, q QueuedRun) error {
	if err := checkRunID(q.ID); err != nil {
		return fmt.Errorf("audit: enqueue: %w", err)
	}
	q2 := "INSERT OR REPLACE INTO demo_queue (id, visitor, preset, queued_at) VALUES (?, ?, ?, ?)"
	if s.db.pg {
		q2 = `INSERT INTO demo_queue (id, visitor, preset, queued_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET visitor = EXCLUDED.visitor, preset = EXCLUDED.preset, queued_at = EXCLUDED.queued_at`
	}
	_, err := s.db.ExecContext(ctx, q2,
		q.ID, q.Visitor, policy.Cut(q.Preset, 64), formatTime(q.QueuedAt))
	if err != nil {
		return fmt.Errorf("audit: enqueue %s: %w", q.ID, err)
	}
	return nil
}

// Dequeue records that a run left the queue (it started, or ended without starting).
func (s *Store) Dequeue(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM demo_queue WHERE id = ?", id); err != nil {
		return fmt.Errorf("audit: dequeue %s: %w", id, err)
	}
	return nil
}

// Queued returns the runs in the queue, oldest first.
func (s *Store) Queued(ctx context.Context) ([]QueuedRun, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, visitor, preset, queued_at FROM demo_queue ORDER BY queued_at")
	if err != nil {
		return nil, fmt.Errorf("audit: queue: %w", err)
	}
	defer rows.Close()
	var out []QueuedRun
	for rows.Next() {
		var q QueuedRun
		var at string
		if err := rows.Scan(&q.ID, &q.Visitor, &q.Preset, &at); err != nil {
			return nil, fmt.Errorf("audit: queue: %w", err)
		}
		if q.QueuedAt, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("audit: queue: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
