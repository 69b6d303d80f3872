// Package queue runs the agent's runs through a job queue on River (github.com/riverqueue/river):
// "serve" enqueues a run, a worker takes it. The queue lives in the audit store's database: the
// SQLite file by default (riversqlite; the workers inside the serve process, nothing new to
// start), or PostgreSQL (riverpgxv5) for "browser-agent worker" processes on any number of
// machines beside "serve".
//
// A run executes exactly once. River delivers a job at least once: a worker that dies mid-run
// leaves its job running until River's rescuer hands it out again. The check-and-set that makes
// it once is the run's audit row: a run's first act is to begin its row under the run's ID
// (audit.Store.BeginRun, whose primary key refuses a second begin with audit.ErrStarted), and a
// run ends through audit.Store.FinishRunOnce, which records an end only while the row is still
// running. A job handed out again whose run has already begun does not run it: it ends the row
// interrupted if it is still running (its worker died) and completes. See Recorder.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"riverqueue.com/riverui"

	"github.com/browser-agent/browser-agent/audit"
)

// Kind is the River job kind of a run.
const Kind = "browser_agent_run"

// MaxAttempts bounds how often River hands a run's job out. Only the first attempt that begins
// the run's row runs it; the others (after a worker died, or a rescue) only close the row.
const MaxAttempts = 10

// Job is one queued run: the job's arguments, stored in River's job table. It names the task,
// never a secret: the model's credentials are the worker's own.
type Job struct {
	RunID  string `json:"run_id"`
	Task   string `json:"task,omitempty"`
	Preset string `json:"preset,omitempty"`
	Model  string `json:"model,omitempty"`
	// NotAfter, when set, is when the run is no longer wanted: a worker that takes the job later
	// does not run it but ends its row interrupted (ReasonExpired). serve sets it: its visitor's
	// page waits that long at most, and a server that stopped leaves no run to execute unwatched.
	NotAfter time.Time `json:"not_after,omitzero"`
}

// Expired reports whether the job's run is no longer wanted at now.
func (j Job) Expired(now time.Time) bool { return !j.NotAfter.IsZero() && now.After(j.NotAfter) }

// Kind is the job's River kind.
func (Job) Kind() string { return Kind }

// InsertOpts are the job's insert options.
func (Job) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: MaxAttempts} }

// Exec runs one job. attempt is River's attempt number (1 the first time). Its error is logged
// and the job is retried; the run's own outcome belongs to the audit row, not to the error.
type Exec func(ctx context.Context, job Job, attempt int) error

// Config is how a Queue is opened.
type Config struct {
	// DB is the database: a postgres:// (or postgresql://) URL, else an SQLite file path (the audit
	// store's).
	DB string
	// Workers is how many runs this process works at a time; 0 only enqueues.
	Workers int
	// RunTimeout bounds one run (the coordinator's deadline and the browser's close). The job's
	// timeout is RunTimeout+JobSlack: past it the job's context ends, and with it the run.
	RunTimeout time.Duration
	// RescueAfter is how long a job may stay running before River hands it out again (its worker
	// died): at least RunTimeout+JobSlack+1s, never a job whose worker may still run it. Default
	// RunTimeout+JobSlack+RescueSlack.
	RescueAfter time.Duration
	// Exec runs a job; needed when Workers > 0.
	Exec Exec
	// Logger gets River's log lines (default: warnings and errors to stderr... discarded when nil).
	Logger *slog.Logger
	// PollInterval is how often a worker looks for new jobs where the database cannot notify it
	// (SQLite); default 100 ms.
	PollInterval time.Duration
}

// Slack added to RunTimeout: the job's timeout (a run's end and its browser's close), then River's
// rescue of a job left running (its worker died).
const (
	JobSlack    = 10 * time.Second
	RescueSlack = 30 * time.Second
)

// client is what the queue needs of a River client, whichever its transaction type.
type client interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobCancel(ctx context.Context, jobID int64) (*rivertype.JobRow, error)
}

// Queue is an open queue: it enqueues runs and, with Workers > 0, works them.
type Queue struct {
	c        client
	ui       func(prefix string, logger *slog.Logger) (*riverui.Handler, error)
	workers  int
	close    func()
	backend  string
	stopOnce sync.Once
}

// IsPostgres reports whether db names a PostgreSQL database rather than an SQLite file.
func IsPostgres(db string) bool { return audit.IsPostgres(db) }

// Open opens the queue in cfg.DB, creating River's tables there when missing (River's own
// migrations). It does not start the workers: Start does.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	if cfg.Workers < 0 {
		return nil, errors.New("queue: workers must not be negative")
	}
	if cfg.Workers > 0 && cfg.Exec == nil {
		return nil, errors.New("queue: workers need an Exec")
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 2 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.RescueAfter == 0 {
		cfg.RescueAfter = cfg.RunTimeout + JobSlack + RescueSlack
	}
	if cfg.RescueAfter < cfg.RunTimeout+JobSlack+time.Second {
		return nil, fmt.Errorf("queue: rescue after %v: must be at least the run timeout + %v + 1s (%v), or a run still going could be handed out again",
			cfg.RescueAfter, JobSlack, cfg.RunTimeout+JobSlack+time.Second)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rc := &river.Config{
		Logger:               logger,
		MaxAttempts:          MaxAttempts,
		JobTimeout:           cfg.RunTimeout + JobSlack,
		RescueStuckJobsAfter: cfg.RescueAfter,
		FetchPollInterval:    cfg.PollInterval,
		FetchCooldown:        min(cfg.PollInterval, 100*time.Millisecond),
	}
	if cfg.Workers > 0 {
		ws := river.NewWorkers()
		if err := river.AddWorkerSafely(ws, &worker{exec: cfg.Exec}); err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		rc.Workers = ws
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}}
	}
	q := &Queue{workers: cfg.Workers}
	if IsPostgres(cfg.DB) {
		pool, err := pgxpool.New(ctx, cfg.DB)
		if err != nil {
			return nil, fmt.Errorf("queue: %s: %w", audit.RedactURL(cfg.DB), err)
		}
		drv := riverpgxv5.New(pool)
		if err := migratePG(ctx, pool, drv); err != nil {
			pool.Close()
			return nil, fmt.Errorf("queue: %s: migrate: %w", audit.RedactURL(cfg.DB), err)
		}
		c, err := river.NewClient(drv, rc)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("queue: %w", err)
		}
		q.c, q.close, q.backend = c, pool.Close, "postgresql"
		q.ui = func(prefix string, logger *slog.Logger) (*riverui.Handler, error) {
			return riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(c, nil), Logger: logger, Prefix: prefix, JobListHideArgsByDefault: true})
		}
		return q, nil
	}
	db, err := sql.Open("sqlite3", sqliteDSN(cfg.DB))
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", cfg.DB, err)
	}
	// River does many things at once; SQLite takes one writer at a time. One connection per
	// process, and the busy timeout and immediate transactions for the other processes.
	db.SetMaxOpenConns(1)
	drv := riversqlite.New(db)
	if err := migrateSQLite(ctx, cfg.DB, drv); err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: %s: migrate: %w", cfg.DB, err)
	}
	// SQLite cannot notify: the workers poll (PollOnly).
	rc.PollOnly = true
	c, err := river.NewClient(drv, rc)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: %w", err)
	}
	q.c, q.close, q.backend = c, func() { db.Close() }, "sqlite"
	q.ui = func(prefix string, logger *slog.Logger) (*riverui.Handler, error) {
		return riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(c, nil), Logger: logger, Prefix: prefix, JobListHideArgsByDefault: true})
	}
	return q, nil
}

func migrate[TTx any](ctx context.Context, drv riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// migrateLock is the PostgreSQL advisory lock that serializes River's migrations when serve and
// workers start at once (migrateSQLite's file lock does it on SQLite).
const migrateLock = 0x62612d71 // "ba-q"

func migratePG(ctx context.Context, pool *pgxpool.Pool, drv *riverpgxv5.Driver) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLock)
	return migrate(ctx, drv)
}

// migrateSQLite runs River's migrations on the SQLite file at path while holding an exclusive
// flock on path+"-migrate.lock": River reads which versions are applied before its transaction
// takes SQLite's write lock, so serve and a worker starting at once on one file both found
// version 002 missing and the second failed ("table river_job already exists"; seen with a CPU
// burner). The lock is a file of its own: closing another descriptor of the database file would
// drop SQLite's own POSIX locks held by this process.
func migrateSQLite(ctx context.Context, path string, drv *riversqlite.Driver) error {
	f, err := os.OpenFile(path+"-migrate.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return migrate(ctx, drv)
}

// sqliteDSN is the audit store's connection settings for the file at path: WAL, a busy timeout,
// immediate transactions (so that two processes never deadlock upgrading a read to a write).
func sqliteDSN(path string) string {
	return audit.SQLiteDSN(path)
}

// UI is River UI (riverqueue.com/riverui) over the queue, served under prefix: the jobs by state,
// their attempts and errors, the queues, the workers' clients. Its job lists hide the arguments
// (a job's task) until asked. Start the handler before serving it.
func (q *Queue) UI(prefix string, logger *slog.Logger) (*riverui.Handler, error) {
	return q.ui(prefix, logger)
}

// Backend is "sqlite" or "postgresql".
func (q *Queue) Backend() string { return q.backend }

// Start starts the workers (nothing when Workers is 0 but River's own bookkeeping).
func (q *Queue) Start(ctx context.Context) error {
	if q.workers == 0 {
		return nil
	}
	return q.c.Start(ctx)
}

// Enqueue puts a run on the queue and returns its job's ID.
func (q *Queue) Enqueue(ctx context.Context, j Job) (int64, error) {
	if j.RunID == "" {
		return 0, errors.New("queue: enqueue: a job needs a run id")
	}
	res, err := q.c.Insert(ctx, j, nil)
	if err != nil {
		return 0, fmt.Errorf("queue: enqueue %s: %w", j.RunID, err)
	}
	return res.Job.ID, nil
}

// Cancel takes a job off the queue if no worker has taken it yet; a job being worked goes on
// (River cancels its context only in the process that works it).
func (q *Queue) Cancel(ctx context.Context, id int64) error {
	if _, err := q.c.JobCancel(ctx, id); err != nil {
		return fmt.Errorf("queue: cancel job %d: %w", id, err)
	}
	return nil
}

// Waiting is how many runs wait in the queue (available, scheduled or retryable) and how many are
// being worked.
func (q *Queue) Waiting(ctx context.Context) (waiting, running int, err error) {
	for _, st := range []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning} {
		cursor := river.NewJobListParams().States(st).First(10000)
		res, err := q.c.JobList(ctx, cursor)
		if err != nil {
			return 0, 0, fmt.Errorf("queue: list: %w", err)
		}
		if st == rivertype.JobStateRunning {
			running = len(res.Jobs)
		} else {
			waiting += len(res.Jobs)
		}
	}
	return waiting, running, nil
}

// Stop stops taking jobs and waits for the runs being worked until ctx ends; then they are
// canceled (each ends interrupted, its end recorded) and Stop waits for them. It closes the
// database connections.
// Only the first call stops; later ones return at once.
func (q *Queue) Stop(ctx context.Context) error {
	var err error
	q.stopOnce.Do(func() {
		if q.workers > 0 {
			err = q.c.Stop(ctx)
			if ctx.Err() != nil {
				err = q.c.StopAndCancel(context.Background())
			}
		}
		q.close()
	})
	return err
}

// worker is the River worker of Kind.
type worker struct {
	river.WorkerDefaults[Job]
	exec Exec
}

func (w *worker) Work(ctx context.Context, j *river.Job[Job]) error {
	return w.exec(ctx, j.Args, j.Attempt)
}
