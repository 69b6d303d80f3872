package audit

import (
	"context"
	"database/sql"
)

// SQL is the audit database for the tables another package keeps in it (the live demo's visit
// log: web/internal/demostate), in the store's dialect: statements are written with '?'
// placeholders, rebound to $1, $2, ... on PostgreSQL, and Postgres says which dialect to write
// where the two differ. Such a package owns its statements and its tables' schema: it creates
// them itself, for this package's migrations create only the audit tables.
type SQL struct{ db dbx }

// SQL returns the store's database for another package's tables.
func (s *Store) SQL() SQL { return SQL{s.db} }

// Postgres reports whether the database is PostgreSQL rather than SQLite.
func (q SQL) Postgres() bool { return q.db.pg }

// ExecContext runs a statement that returns no rows.
func (q SQL) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.db.ExecContext(ctx, query, args...)
}

// QueryContext runs a query.
func (q SQL) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.db.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query of at most one row.
func (q SQL) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return q.db.QueryRowContext(ctx, query, args...)
}

// BeginTx starts a transaction. On SQLite it holds the database's write lock from the start (an
// immediate transaction); on PostgreSQL a statement such as LOCK TABLE takes what it needs.
func (q SQL) BeginTx(ctx context.Context) (Tx, error) {
	tx, err := q.db.BeginTx(ctx, nil)
	return Tx{tx}, err
}

// Tx is a transaction of SQL.
type Tx struct{ tx txx }

// ExecContext runs a statement that returns no rows.
func (t Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryRowContext runs a query of at most one row.
func (t Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

// Commit commits the transaction.
func (t Tx) Commit() error { return t.tx.Commit() }

// Rollback aborts the transaction; after Commit it does nothing.
func (t Tx) Rollback() error { return t.tx.Rollback() }
