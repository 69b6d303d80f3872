// Package audit records runs and their tool steps, metadata only, in a durable SQLite store, or
// in PostgreSQL (Open with a postgres:// URL: the same Store, tables and rows) when the run queue's
// workers run on several machines (internal/queue).
//
// The store never holds page text, field values, answers, query strings or secrets. This is
// enforced here rather than left to callers: a Step carries a URL, and the store keeps only its
// origin and path; rule and reason texts are cut at the first '?' or '#' and bounded in length.
//
// It sits on policy, beside bridge and proxy; the coordinator records through its Recorder
// interface, and web, mcpserver and internal/cli open the Store.
//
// Key types: Store (Open, DefaultPath; BeginRun, AddStep, FinishRun, and for a queued run's
// once-only begin and end ErrStarted, FinishRunOnce and InterruptRun; Runs, the spend ledger,
// Check and RecoverCrashed after a crash), Run and Step (the rows), WriteError (a store that
// cannot be written, saying what to do) and SchemaError; SQL (Store.SQL), the database in the
// store's dialect for a package's own tables, which that package creates: the live demo's visit
// log (web/internal/demostate). The migrations here create only the audit tables (runs, steps,
// spend).
package audit
