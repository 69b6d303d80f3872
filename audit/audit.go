package audit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/mattn/go-sqlite3" // also registers the "sqlite3" driver
)

// Field names of the canonical records. They are the column names of the runs, steps and spend
// tables and the JSON keys of Run and Step.
const (
	// runs
	FieldID               = "id"
	FieldStartedAt        = "started_at"
	FieldFinishedAt       = "finished_at"
	FieldRecordID         = "record_id"
	FieldPreset           = "preset"
	FieldModel            = "model"
	FieldStatus           = "status"
	FieldReason           = "reason" // runs and steps
	FieldStepCount        = "step_count"
	FieldPromptTokens     = "prompt_tokens"
	FieldCompletionTokens = "completion_tokens"
	FieldModelTurns       = "model_turns"
	FieldCostUSD          = "cost_usd"
	FieldSimulated        = "simulated"
	FieldPID              = "pid"        // the process that runs it, for crash recovery
	FieldProcStart        = "proc_start" // that process's start marker (see ProcessMarker)
	FieldKind             = "kind"
	FieldClient           = "client"
	FieldWall             = "wall"

	// steps
	FieldRunID         = "run_id"
	FieldN             = "n"
	FieldTool          = "tool"
	FieldOrigin        = "origin"
	FieldPath          = "path"
	FieldVerdict       = "verdict"
	FieldRule          = "rule"
	FieldLayer         = "layer"
	FieldDurationMS    = "duration_ms"
	FieldBytesReturned = "bytes_returned"
	FieldRecordedAt    = "recorded_at" // when the step was committed

	// spend
	FieldDay = "day"
	FieldUSD = "usd"
)

// Run kinds: what started a run.
const (
	KindRun   = "run"   // the coordinator's own loop: run, serve, record
	KindMCP   = "mcp"   // the tool calls of one MCP client session
	KindGuard = "guard" // the tool calls passed to another MCP server through browser-agent guard
)

// StatusRunning is the status BeginRun records when the Run gives none. It is the only status
// that is not terminal: every other status is how a run ended.
const StatusRunning = "running"

// StatusInterrupted is the status of a run that a signal or a shutdown ended, and of a run whose
// process ended without recording its end (RecoverCrashed, reason ReasonCrashed...).
const StatusInterrupted = "interrupted"

// Length bounds, in bytes, of stored text fields. Longer values are cut at a UTF-8 boundary.
const (
	MaxReasonLen = policy.MaxTextLen // rule and reason of a step, reason of a run
	MaxPathLen   = policy.MaxPathLen
	maxShortLen  = policy.MaxShortLen // tool, verdict, status, preset, model, record id, origin
)

// ErrNotFound is returned (wrapped) when a run does not exist.
var ErrNotFound = errors.New("run not found")

// ErrStarted is returned (wrapped) by BeginRun for a run ID that is already recorded: the run was
// started before (the queue's check-and-set: a queued run is begun at most once).
var ErrStarted = errors.New("run already started")

// ErrEnded is returned (wrapped) by FinishRunOnce for a run that has already ended.
var ErrEnded = errors.New("run already ended")

// ErrInvalid is returned (wrapped) when a record is refused before it reaches the database.
var ErrInvalid = errors.New("invalid audit record")

// ErrSchemaTooNew is what a SchemaError unwraps to.
var ErrSchemaTooNew = errors.New("audit database schema is newer than this program")

// SchemaError reports a database written by a newer version of this program.
type SchemaError struct {
	Path      string // the database file
	Version   int    // the schema version found in the file
	Supported int    // the newest version this program knows
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("audit: %s: schema version %d is newer than the %d this program supports; upgrade browser-agent",
		e.Path, e.Version, e.Supported)
}

// Unwrap returns ErrSchemaTooNew.
func (e *SchemaError) Unwrap() error { return ErrSchemaTooNew }

// Run is one run of the agent: the canonical run record.
type Run struct {
	ID               string    `json:"id"`
	StartedAt        time.Time `json:"started_at"`
	FinishedAt       time.Time `json:"finished_at,omitzero"` // zero while the run is in progress
	RecordID         string    `json:"record_id"`
	Preset           string    `json:"preset"`
	Model            string    `json:"model"`
	Status           string    `json:"status"`
	Reason           string    `json:"reason"`
	StepCount        int       `json:"step_count"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	// ModelTurns is the number of times the model was asked for its next turn: each re-sends the
	// whole conversation, so it is what PromptTokens is the sum over.
	ModelTurns int     `json:"model_turns"`
	CostUSD    float64 `json:"cost_usd"`
	Simulated  bool    `json:"simulated"`
	// PID and ProcStart name the process that runs it; BeginRun fills in the calling process when
	// PID is 0. A run left running by a process that no longer exists is recovered at the next Open.
	PID       int    `json:"pid"`
	ProcStart string `json:"proc_start"`
	Kind      string `json:"kind"`   // KindRun, KindMCP or KindGuard; "" means KindRun
	Client    string `json:"client"` // for KindMCP and KindGuard: the client's name and version
	// Wall is the run's line about the operating system's wall around its browser: "on: ..." (how)
	// or "off: ..." (why not); "" when no browser was launched. FinishRun records it.
	Wall string `json:"wall"`
}

// Step is one tool call of a run and the decision on it: the canonical step record, the shared
// decision record (policy.Entry) with the tool, the time it took and what it returned.
//
// URL is the input: AddStep stores only its origin and path, never its query, fragment or userinfo.
// Origin and Path are the outputs when a step is read back. When URL is "", AddStep derives them
// from Origin+Path, with the same stripping. The Entry's Method is not stored.
type Step struct {
	RunID string `json:"run_id"`
	Tool  string `json:"tool"`
	URL   string `json:"-"`
	policy.Entry
	Duration      time.Duration `json:"-"` // stored and marshalled as duration_ms
	BytesReturned int           `json:"bytes_returned"`
	RecordedAt    time.Time     `json:"recorded_at"` // set by AddStep: when the step was committed
}

// MarshalJSON writes the step as it would be stored: sanitized, without URL, with duration_ms.
func (st Step) MarshalJSON() ([]byte, error) {
	c := Sanitize(st)
	type plain Step // drops this method
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(c), c.Duration.Milliseconds()})
}

// Sanitize returns st as the store records it: URL cleared, Origin and Path derived from it without
// query, fragment or userinfo (policy.OriginPath), and every text field bounded (policy.Entry.Clean).
// AddStep applies it; callers may use it to log the same canonical record.
func Sanitize(st Step) Step {
	if st.URL != "" {
		st.Origin, st.Path = st.URL, "" // Clean derives origin and path from it
	}
	st.URL = ""
	st.Method = ""
	st.Entry = st.Entry.Clean()
	st.Tool = policy.Cut(st.Tool, maxShortLen)
	return st
}

// migrations is the schema history of the audit tables (runs, steps, spend), oldest first.
// Migration i brings the database to version i+1, recorded in PRAGMA user_version. Never edit a
// migration that has shipped; append a new one (4 was emptied when the tables it created moved to
// the package that uses them: see there). The SQL is literal on purpose: it is history, and must
// not change when a constant does.
var migrations = []string{
	// 1: runs and steps.
	`CREATE TABLE runs (
		id                TEXT PRIMARY KEY,
		started_at        TEXT NOT NULL,
		finished_at       TEXT,
		record_id         TEXT NOT NULL DEFAULT '',
		preset            TEXT NOT NULL DEFAULT '',
		model             TEXT NOT NULL DEFAULT '',
		status            TEXT NOT NULL DEFAULT '',
		reason            TEXT NOT NULL DEFAULT '',
		step_count        INTEGER NOT NULL DEFAULT 0,
		prompt_tokens     INTEGER NOT NULL DEFAULT 0,
		completion_tokens INTEGER NOT NULL DEFAULT 0,
		cost_usd          REAL NOT NULL DEFAULT 0,
		simulated         INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX runs_started_at ON runs (started_at);
	CREATE TABLE steps (
		seq            INTEGER PRIMARY KEY,
		run_id         TEXT NOT NULL REFERENCES runs (id),
		n              INTEGER NOT NULL,
		tool           TEXT NOT NULL DEFAULT '',
		origin         TEXT NOT NULL DEFAULT '',
		path           TEXT NOT NULL DEFAULT '',
		verdict        TEXT NOT NULL DEFAULT '',
		rule           TEXT NOT NULL DEFAULT '',
		reason         TEXT NOT NULL DEFAULT '',
		layer          TEXT NOT NULL DEFAULT '',
		duration_ms    INTEGER NOT NULL DEFAULT 0,
		bytes_returned INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX steps_run_id_n ON steps (run_id, n);`,

	// 2: the spend ledger, one row per charge, summed per day for the daily spend cap.
	`CREATE TABLE spend (
		day TEXT NOT NULL,
		usd REAL NOT NULL
	);
	CREATE INDEX spend_day ON spend (day);`,

	// 3: write ahead: the process that runs a run, and when each step was committed.
	`ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN proc_start TEXT NOT NULL DEFAULT '';
	ALTER TABLE steps ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';
	CREATE INDEX runs_status ON runs (status);`,

	// 4: empty. It created the live demo's tables (demo_salt, demo_visits, demo_queue), which the
	// demo now creates itself when missing (web/internal/demostate), with the same definitions:
	// databases of schema 4 and later keep the tables and their rows, and one built now has them
	// once the demo opens it. The slot stays, so that a version means the same audit tables in
	// every database.
	``,

	// 5: the kind of a run (run or mcp) and, for mcp, the client that made the calls.
	`ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';
	ALTER TABLE runs ADD COLUMN client TEXT NOT NULL DEFAULT '';`,

	// 6: the operating system's wall around the run's browser: on (how) or off (why).
	`ALTER TABLE runs ADD COLUMN wall TEXT NOT NULL DEFAULT '';`,

	// 7: the model turns of a run (the tokens are billed per turn, the conversation re-sent).
	`ALTER TABLE runs ADD COLUMN model_turns INTEGER NOT NULL DEFAULT 0;`,
}

// SchemaVersion is the schema version this program writes (PRAGMA user_version).
func SchemaVersion() int { return len(migrations) }

// busyTimeout is how long a connection waits for another writer's lock.
const busyTimeout = 5 * time.Second

// timeLayout stores times in UTC with a fixed width, so that text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Store is an open audit database. It is safe for concurrent use.
type Store struct {
	db        dbx
	path      string
	recovered []Run // the runs Open's RecoverCrashed ended
}

// Open opens the audit database at path, creating it and its parent directory when missing, and
// brings its schema up to date. The database runs in WAL mode with synchronous=FULL, so a write has
// reached the disk when its call returns. A database from a newer program gives a *SchemaError.
// ":memory:" opens a private in-memory database (tests only; nothing is durable). A postgres:// or
// postgresql:// URL opens the store in that PostgreSQL database instead (see postgres.go).
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("audit: open: empty path")
	}
	if IsPostgres(path) {
		return openPostgres(path)
	}
	params := sqliteParams
	var dsn string
	memory := path == ":memory:"
	if memory {
		dsn = "file::memory:?" + params
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("audit: open %s: %w", path, err)
		}
		path = abs
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("audit: open %s: %w", path, err)
		}
		// Create the file owner-only; SQLite gives its -wal and -shm files the same mode.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, &WriteError{Path: path, Op: "open", Err: err}
		}
		f.Close()
		dsn = fileURI(path) + "?" + params
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if memory {
		db.SetMaxOpenConns(1) // every connection to :memory: is a different database
	}
	s := &Store{db: dbx{DB: db}, path: path}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, s.writeError("open", err)
	}
	if s.recovered, err = s.RecoverCrashed(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// sqliteParams are the connection settings of every connection to the audit file.
var sqliteParams = fmt.Sprintf("_journal_mode=WAL&_synchronous=FULL&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate",
	busyTimeout.Milliseconds())

// SQLiteDSN is the "sqlite3" data source name of the audit file at path with the store's own
// connection settings (WAL, synchronous=FULL, a busy timeout, immediate transactions), for
// another user of the same file (the run queue).
func SQLiteDSN(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return fileURI(path) + "?" + sqliteParams
}

// fileURI makes an SQLite URI for an absolute path, escaping '?', '#' and '%' in it.
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letter
	}
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file://" + r.Replace(p)
}

// migrate applies the migrations the database lacks, all in one immediate transaction so that
// concurrent openers serialize and a failed migration leaves nothing behind.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("audit: open %s: read schema version: %w", s.path, err)
	}
	if v > len(migrations) {
		return &SchemaError{Path: s.path, Version: v, Supported: len(migrations)}
	}
	if v == len(migrations) {
		return nil
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("audit: open %s: migration %d: %w", s.path, i+1, err)
		}
	}
	// PRAGMA takes no parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("audit: open %s: set schema version: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: open %s: commit migrations: %w", s.path, err)
	}
	return nil
}

// Recovered returns the runs that Open found left running by a dead process and ended.
func (s *Store) Recovered() []Run { return s.recovered }

// Path is the absolute path of the database file (":memory:" for an in-memory store).
func (s *Store) Path() string { return s.path }

// Close closes the database. The last connection to close checkpoints the WAL into the main file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("audit: close %s: %w", s.path, err)
	}
	return nil
}

// DefaultPath is where the audit database lives: $BROWSER_AGENT_DB, else
// $XDG_STATE_HOME/browser-agent/audit.db, else ~/.local/state/browser-agent/audit.db.
func DefaultPath() string {
	if p := os.Getenv("BROWSER_AGENT_DB"); p != "" {
		return p
	}
	// The XDG spec says relative values are invalid and must be ignored.
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "browser-agent", "audit.db")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join("browser-agent", "audit.db")
	}
	return filepath.Join(home, ".local", "state", "browser-agent", "audit.db")
}

// NewRunID returns a random run id of 16 lowercase hex characters.
func NewRunID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("audit: crypto/rand failed: " + err.Error()) // rand.Read does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckRunID refuses a run ID that is not 1 to 64 of [A-Za-z0-9_-] (ErrInvalid): the IDs of the
// audit store and of the tables kept beside it.
func CheckRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("run id must be 1 to 64 of [A-Za-z0-9_-]: %w", ErrInvalid)
	}
	return nil
}

// FormatTime is t as the audit database stores times (timeLayout): UTC, fixed width, so that text
// order is time order. The tables kept beside the store's (web/internal/demostate) use it too.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime reads a time FormatTime wrote.
func ParseTime(s string) (time.Time, error) { return time.Parse(timeLayout, s) }

// runColumns are the runs columns in scan order.
var runColumns = []string{
	FieldID, FieldStartedAt, FieldFinishedAt, FieldRecordID, FieldPreset, FieldModel, FieldStatus,
	FieldReason, FieldStepCount, FieldPromptTokens, FieldCompletionTokens, FieldCostUSD, FieldSimulated,
	FieldPID, FieldProcStart, FieldKind, FieldClient, FieldWall, FieldModelTurns,
}

// stepColumns are the steps columns in insert and scan order.
var stepColumns = []string{
	FieldRunID, FieldN, FieldTool, FieldOrigin, FieldPath, FieldVerdict, FieldRule, FieldReason,
	FieldLayer, FieldDurationMS, FieldBytesReturned, FieldRecordedAt,
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// cleanRun bounds a run's text fields; the reason also loses anything after '?' or '#'.
func cleanRun(r Run) Run {
	r.RecordID = policy.Cut(r.RecordID, maxShortLen)
	r.Preset = policy.Cut(r.Preset, maxShortLen)
	r.Model = policy.Cut(r.Model, maxShortLen)
	r.Status = policy.Cut(r.Status, maxShortLen)
	r.Reason = auditText(r.Reason)
	r.Kind = policy.Cut(r.Kind, maxShortLen)
	r.Client = auditText(r.Client)
	r.Wall = auditText(r.Wall)
	if r.Kind == "" {
		r.Kind = KindRun
	}
	return r
}

func checkCounts(r Run) error {
	if r.StepCount < 0 || r.PromptTokens < 0 || r.CompletionTokens < 0 || r.ModelTurns < 0 {
		return fmt.Errorf("negative count: %w", ErrInvalid)
	}
	if math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0) || r.CostUSD < 0 {
		return fmt.Errorf("cost must be a finite non-negative number: %w", ErrInvalid)
	}
	return nil
}

// BeginRun records the start of a run and returns its id: r.ID when given, else a new NewRunID.
// A zero StartedAt means now, an empty Status means StatusRunning. FinishedAt is ignored.
func (s *Store) BeginRun(ctx context.Context, r Run) (string, error) {
	if r.ID == "" {
		r.ID = NewRunID()
	}
	if err := CheckRunID(r.ID); err != nil {
		return "", fmt.Errorf("audit: begin run: %w", err)
	}
	if err := checkCounts(r); err != nil {
		return "", fmt.Errorf("audit: begin run %s: %w", r.ID, err)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = time.Now()
	}
	if r.Status == "" {
		r.Status = StatusRunning
	}
	if r.PID == 0 {
		r.PID, r.ProcStart = os.Getpid(), ProcessMarker(os.Getpid())
	}
	r = cleanRun(r)
	q := "INSERT INTO runs (" + strings.Join(runColumns, ", ") + ") VALUES (" + placeholders(len(runColumns)) + ")"
	_, err := s.db.ExecContext(ctx, q,
		r.ID, FormatTime(r.StartedAt), nil, r.RecordID, r.Preset, r.Model, r.Status,
		r.Reason, r.StepCount, r.PromptTokens, r.CompletionTokens, r.CostUSD, boolInt(r.Simulated), r.PID, r.ProcStart, r.Kind, r.Client, r.Wall, r.ModelTurns)
	if err != nil {
		if isUnique(err) {
			return "", fmt.Errorf("audit: begin run %s: %w", r.ID, ErrStarted)
		}
		if werr := s.writeError("begin run", err); werr != err {
			return "", werr
		}
		return "", fmt.Errorf("audit: begin run %s: %w", r.ID, err)
	}
	return r.ID, nil
}

// AddStep records one step of a run, sanitized as by Sanitize. The run must exist. Layer must be one
// of the Layer* constants.
func (s *Store) AddStep(ctx context.Context, st Step) error {
	if err := CheckRunID(st.RunID); err != nil {
		return fmt.Errorf("audit: add step: %w", err)
	}
	switch st.Layer {
	case policy.LayerPolicy, policy.LayerBrowser, policy.LayerProxy, policy.LayerCoordinator:
	default:
		return fmt.Errorf("audit: add step %s/%d: layer %q is not one of policy, browser, proxy, coordinator: %w",
			st.RunID, st.N, policy.Cut(st.Layer, 32), ErrInvalid)
	}
	if st.N < 0 || st.BytesReturned < 0 || st.Duration < 0 {
		return fmt.Errorf("audit: add step %s/%d: negative number: %w", st.RunID, st.N, ErrInvalid)
	}
	c := Sanitize(st)
	q := "INSERT INTO steps (" + strings.Join(stepColumns, ", ") + ") VALUES (" + placeholders(len(stepColumns)) + ")"
	_, err := s.db.ExecContext(ctx, q,
		c.RunID, c.N, c.Tool, c.Origin, c.Path, c.Verdict.String(), c.Rule, c.Reason,
		c.Layer, c.Duration.Milliseconds(), c.BytesReturned, FormatTime(time.Now()))
	if err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("audit: add step %s/%d: %w", st.RunID, st.N, ErrNotFound)
		}
		if werr := s.writeError("add step", err); werr != err {
			return werr
		}
		return fmt.Errorf("audit: add step %s/%d: %w", st.RunID, st.N, err)
	}
	return nil
}

func isForeignKey(err error) bool {
	if pgCode(err) == "23503" { // foreign_key_violation
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintForeignKey
}

func isUnique(err error) bool {
	if pgCode(err) == "23505" { // unique_violation
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique)
}

// FinishRun records the end of run r.ID: its status, reason, step count, tokens, cost, wall and
// finished_at (now when zero); an empty Wall keeps the one recorded. Simulated can only be turned on, never off. A missing run gives
// ErrNotFound.
func (s *Store) FinishRun(ctx context.Context, r Run) error { return s.finishRun(ctx, r, false) }

// FinishRunOnce is FinishRun for a run that must end exactly once (a queued run): it records the
// end only while the run is still running, and gives ErrEnded (wrapped) when it has already ended
// (finished, or ended interrupted by a recovery).
func (s *Store) FinishRunOnce(ctx context.Context, r Run) error { return s.finishRun(ctx, r, true) }

// InterruptRun ends run id as StatusInterrupted with reason, as RecoverCrashed does, if it is still
// running: ended reports whether this call ended it. A missing run gives ErrNotFound.
func (s *Store) InterruptRun(ctx context.Context, id, reason string) (ended bool, err error) {
	if err := CheckRunID(id); err != nil {
		return false, fmt.Errorf("audit: interrupt run: %w", err)
	}
	res, err := s.interrupt(ctx, id, reason)
	if err != nil {
		return false, fmt.Errorf("audit: interrupt run %s: %w", id, s.writeError("interrupt run", err))
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	if _, _, err := s.Run(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

func (s *Store) finishRun(ctx context.Context, r Run, once bool) error {
	if err := CheckRunID(r.ID); err != nil {
		return fmt.Errorf("audit: finish run: %w", err)
	}
	if err := checkCounts(r); err != nil {
		return fmt.Errorf("audit: finish run %s: %w", r.ID, err)
	}
	if r.FinishedAt.IsZero() {
		r.FinishedAt = time.Now()
	}
	r = cleanRun(r)
	greatest := "MAX" // SQLite's scalar max
	if s.db.pg {
		greatest = "GREATEST"
	}
	q := fmt.Sprintf("UPDATE runs SET %s = ?, %s = ?, %s = ?, %s = ?, %s = ?, %s = ?, %s = ?, %s = ?, %s = "+greatest+"(%s, ?), %s = COALESCE(NULLIF(?, ''), %s) WHERE %s = ?",
		FieldFinishedAt, FieldStatus, FieldReason, FieldStepCount, FieldPromptTokens, FieldCompletionTokens, FieldModelTurns,
		FieldCostUSD, FieldSimulated, FieldSimulated, FieldWall, FieldWall, FieldID)
	args := []any{FormatTime(r.FinishedAt), r.Status, r.Reason, r.StepCount, r.PromptTokens, r.CompletionTokens, r.ModelTurns,
		r.CostUSD, boolInt(r.Simulated), r.Wall, r.ID}
	if once {
		q += fmt.Sprintf(" AND %s = ?", FieldStatus)
		args = append(args, StatusRunning)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		if werr := s.writeError("finish run", err); werr != err {
			return werr
		}
		return fmt.Errorf("audit: finish run %s: %w", r.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("audit: finish run %s: %w", r.ID, err)
	}
	if n == 0 && once {
		if _, _, err := s.Run(ctx, r.ID); err != nil {
			return err
		}
		return fmt.Errorf("audit: finish run %s: %w", r.ID, ErrEnded)
	}
	if n == 0 {
		return fmt.Errorf("audit: finish run %s: %w", r.ID, ErrNotFound)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (Run, error) {
	var (
		r                 Run
		started           string
		finished          sql.NullString
		simulated         int
		steps, prom, comp int64
		pid, turns        int64
	)
	if err := sc.Scan(&r.ID, &started, &finished, &r.RecordID, &r.Preset, &r.Model, &r.Status,
		&r.Reason, &steps, &prom, &comp, &r.CostUSD, &simulated, &pid, &r.ProcStart, &r.Kind, &r.Client, &r.Wall, &turns); err != nil {
		return Run{}, err
	}
	var err error
	if r.StartedAt, err = ParseTime(started); err != nil {
		return Run{}, fmt.Errorf("run %s: %s: %w", r.ID, FieldStartedAt, err)
	}
	if finished.Valid {
		if r.FinishedAt, err = ParseTime(finished.String); err != nil {
			return Run{}, fmt.Errorf("run %s: %s: %w", r.ID, FieldFinishedAt, err)
		}
	}
	r.StepCount, r.PromptTokens, r.CompletionTokens = int(steps), int(prom), int(comp)
	r.Simulated = simulated != 0
	r.PID, r.ModelTurns = int(pid), int(turns)
	return r, nil
}

// Runs returns up to limit runs, newest first; limit <= 0 means all.
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = math.MaxInt32 // no limit
	}
	order := "rowid" // insertion order breaks a tie
	if s.db.pg {
		order = FieldID
	}
	q := fmt.Sprintf("SELECT %s FROM runs ORDER BY %s DESC, %s DESC LIMIT ?",
		strings.Join(runColumns, ", "), FieldStartedAt, order)
	rows, err := s.db.QueryContext(ctx, q, limit)
	if err != nil {
		return nil, fmt.Errorf("audit: runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("audit: runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: runs: %w", err)
	}
	return out, nil
}

// Run returns one run and its steps in order. A missing run gives ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (Run, []Step, error) {
	if CheckRunID(id) != nil {
		return Run{}, nil, fmt.Errorf("audit: run %q: %w", policy.Cut(id, 64), ErrNotFound)
	}
	q := fmt.Sprintf("SELECT %s FROM runs WHERE %s = ?", strings.Join(runColumns, ", "), FieldID)
	r, err := scanRun(s.db.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, nil, fmt.Errorf("audit: run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, nil, fmt.Errorf("audit: run %s: %w", id, err)
	}
	q = fmt.Sprintf("SELECT %s FROM steps WHERE %s = ? ORDER BY %s, seq",
		strings.Join(stepColumns, ", "), FieldRunID, FieldN)
	rows, err := s.db.QueryContext(ctx, q, id)
	if err != nil {
		return Run{}, nil, fmt.Errorf("audit: run %s: steps: %w", id, err)
	}
	defer rows.Close()
	var steps []Step
	for rows.Next() {
		var (
			st          Step
			n, b, ms    int64
			at, verdict string
		)
		if err := rows.Scan(&st.RunID, &n, &st.Tool, &st.Origin, &st.Path, &verdict, &st.Rule,
			&st.Reason, &st.Layer, &ms, &b, &at); err != nil {
			return Run{}, nil, fmt.Errorf("audit: run %s: steps: %w", id, err)
		}
		if at != "" { // steps written before schema 3 have no time
			st.RecordedAt, _ = ParseTime(at)
		}
		st.N, st.BytesReturned, st.Duration = int(n), int(b), time.Duration(ms)*time.Millisecond
		st.Verdict = policy.ParseVerdict(verdict)
		steps = append(steps, st)
	}
	if err := rows.Err(); err != nil {
		return Run{}, nil, fmt.Errorf("audit: run %s: steps: %w", id, err)
	}
	return r, steps, nil
}

const dayLayout = "2006-01-02"

// Day is t's UTC calendar day in the form the spend ledger uses, "2006-01-02".
func Day(t time.Time) string { return t.UTC().Format(dayLayout) }

func checkDay(day string) error {
	if _, err := time.Parse(dayLayout, day); err != nil {
		return fmt.Errorf("day %q is not YYYY-MM-DD: %w", policy.Cut(day, 32), ErrInvalid)
	}
	return nil
}

// AddSpend adds usd, a finite non-negative amount, to the ledger for day ("2006-01-02", see Day).
func (s *Store) AddSpend(ctx context.Context, day string, usd float64) error {
	if err := checkDay(day); err != nil {
		return fmt.Errorf("audit: add spend: %w", err)
	}
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return fmt.Errorf("audit: add spend %s: amount must be a finite non-negative number: %w", day, ErrInvalid)
	}
	q := fmt.Sprintf("INSERT INTO spend (%s, %s) VALUES (?, ?)", FieldDay, FieldUSD)
	if _, err := s.db.ExecContext(ctx, q, day, usd); err != nil {
		return fmt.Errorf("audit: add spend %s: %w", day, err)
	}
	return nil
}

// SpendOn returns the total spent on day; 0 when nothing was recorded.
func (s *Store) SpendOn(ctx context.Context, day string) (float64, error) {
	if err := checkDay(day); err != nil {
		return 0, fmt.Errorf("audit: spend on: %w", err)
	}
	q := fmt.Sprintf("SELECT COALESCE(SUM(%s), 0) FROM spend WHERE %s = ?", FieldUSD, FieldDay)
	var total float64
	if err := s.db.QueryRowContext(ctx, q, day).Scan(&total); err != nil {
		return 0, fmt.Errorf("audit: spend on %s: %w", day, err)
	}
	return total, nil
}

// auditText is s as a stored reason: see policy.Text.
func auditText(s string) string { return policy.Text(s, MaxReasonLen) }
