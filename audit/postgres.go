package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// The audit store on PostgreSQL: the same Store, the same tables and columns (times as the same
// fixed-width UTC text, so that text order is time order and the rows read back the same), for a
// deployment whose workers run on several machines (see internal/queue). Open takes a postgres://
// URL.

// IsPostgres reports whether dsn names a PostgreSQL database (postgres:// or postgresql://)
// rather than an SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// RedactURL drops the password of a PostgreSQL URL, for messages; other strings are returned as
// they are.
func RedactURL(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	i := strings.Index(dsn, "://")
	rest := dsn[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return dsn
	}
	user := rest[:at]
	if c := strings.Index(user, ":"); c >= 0 {
		user = user[:c] + ":***"
	}
	return dsn[:i+3] + user + rest[at:]
}

// pgMigrations is the PostgreSQL schema history of the audit tables (table audit_schema holds the
// version). Version 1 is SQLite's schema 6 in one step, less the live demo's tables: it created
// them until the demo took them over (web/internal/demostate creates them when missing, with the
// same definitions; databases of version 1 and later keep them and their rows). Never edit a
// migration that has shipped otherwise; append a new one.
var pgMigrations = []string{
	`CREATE TABLE runs (
		id                TEXT PRIMARY KEY,
		started_at        TEXT NOT NULL,
		finished_at       TEXT,
		record_id         TEXT NOT NULL DEFAULT '',
		preset            TEXT NOT NULL DEFAULT '',
		model             TEXT NOT NULL DEFAULT '',
		status            TEXT NOT NULL DEFAULT '',
		reason            TEXT NOT NULL DEFAULT '',
		step_count        BIGINT NOT NULL DEFAULT 0,
		prompt_tokens     BIGINT NOT NULL DEFAULT 0,
		completion_tokens BIGINT NOT NULL DEFAULT 0,
		cost_usd          DOUBLE PRECISION NOT NULL DEFAULT 0,
		simulated         INTEGER NOT NULL DEFAULT 0,
		pid               BIGINT NOT NULL DEFAULT 0,
		proc_start        TEXT NOT NULL DEFAULT '',
		kind              TEXT NOT NULL DEFAULT 'run',
		client            TEXT NOT NULL DEFAULT '',
		wall              TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_started_at ON runs (started_at);
	CREATE INDEX runs_status ON runs (status);
	CREATE TABLE steps (
		seq            BIGSERIAL PRIMARY KEY,
		run_id         TEXT NOT NULL REFERENCES runs (id),
		n              BIGINT NOT NULL,
		tool           TEXT NOT NULL DEFAULT '',
		origin         TEXT NOT NULL DEFAULT '',
		path           TEXT NOT NULL DEFAULT '',
		verdict        TEXT NOT NULL DEFAULT '',
		rule           TEXT NOT NULL DEFAULT '',
		reason         TEXT NOT NULL DEFAULT '',
		layer          TEXT NOT NULL DEFAULT '',
		duration_ms    BIGINT NOT NULL DEFAULT 0,
		bytes_returned BIGINT NOT NULL DEFAULT 0,
		recorded_at    TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX steps_run_id_n ON steps (run_id, n);
	CREATE TABLE spend (
		day TEXT NOT NULL,
		usd DOUBLE PRECISION NOT NULL
	);
	CREATE INDEX spend_day ON spend (day);`,

	// 2: SQLite's 7, the model turns of a run.
	`ALTER TABLE runs ADD COLUMN model_turns BIGINT NOT NULL DEFAULT 0;`,
}

// pgLock is the advisory lock that serializes the migrations of concurrent openers.
const pgLock = 0x62612d61 // "ba-a"

// openPostgres opens the audit store in the PostgreSQL database at url and brings its schema up
// to date.
func openPostgres(url string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", RedactURL(url), err)
	}
	s := &Store{db: dbx{DB: db, pg: true}, path: RedactURL(url)}
	if err := s.migratePG(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	if s.recovered, err = s.RecoverCrashed(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migratePG(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgLock); err != nil {
		return fmt.Errorf("audit: open %s: %w", s.path, err)
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS audit_schema (version INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("audit: open %s: %w", s.path, err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM audit_schema").Scan(&v); err != nil {
		return fmt.Errorf("audit: open %s: read schema version: %w", s.path, err)
	}
	if v > len(pgMigrations) {
		return &SchemaError{Path: s.path, Version: v, Supported: len(pgMigrations)}
	}
	for i := v; i < len(pgMigrations); i++ {
		if _, err := tx.ExecContext(ctx, pgMigrations[i]); err != nil {
			return fmt.Errorf("audit: open %s: migration %d: %w", s.path, i+1, err)
		}
	}
	if v < len(pgMigrations) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM audit_schema"); err != nil {
			return fmt.Errorf("audit: open %s: %w", s.path, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO audit_schema (version) VALUES (?)", len(pgMigrations)); err != nil {
			return fmt.Errorf("audit: open %s: %w", s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: open %s: commit migrations: %w", s.path, err)
	}
	return nil
}

// dbx is the store's database: on PostgreSQL it rewrites the '?' placeholders of the store's SQL
// (none of which holds a '?' in a literal) as $1, $2, ...
type dbx struct {
	*sql.DB
	pg bool
}

func rebind(pg bool, q string) string {
	if !pg || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (d dbx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, rebind(d.pg, q), args...)
}

func (d dbx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, rebind(d.pg, q), args...)
}

func (d dbx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, rebind(d.pg, q), args...)
}

func (d dbx) BeginTx(ctx context.Context, opts *sql.TxOptions) (txx, error) {
	tx, err := d.DB.BeginTx(ctx, opts)
	return txx{Tx: tx, pg: d.pg}, err
}

// txx is a transaction of dbx.
type txx struct {
	*sql.Tx
	pg bool
}

func (t txx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, rebind(t.pg, q), args...)
}

func (t txx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, rebind(t.pg, q), args...)
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// bootID is this machine's boot id, the first part of ProcessMarker.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// onThisMachine reports whether the run's process marker names a process of this machine (since
// its last boot). On PostgreSQL the runs of other machines' workers are in the same table: their
// processes cannot be looked up here, and the queue closes the runs of a worker that died.
func onThisMachine(marker string) bool {
	id := bootID()
	return id != "" && strings.HasPrefix(marker, id+":")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
