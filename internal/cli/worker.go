package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

// DefaultWorkerDrain is how long "worker" lets its runs go on after SIGINT or SIGTERM.
const DefaultWorkerDrain = 20 * time.Second

// checkRunTimes checks the --run-timeout and --drain that serve and worker both take.
func checkRunTimes(runTimeout, drain time.Duration) error {
	switch {
	case runTimeout < time.Second:
		return usageError("--run-timeout must be at least 1s")
	case drain < 0:
		return usageError("--drain must not be negative")
	}
	return nil
}

// workerCmd is "browser-agent worker [--db DB] [--workers N] [--policy FILE] [--run-timeout D]":
// it takes runs from the queue in DB (River) and runs each once, with its own warm browsers, until
// SIGINT or SIGTERM.
func workerCmd(e *env, args []string) error {
	fs := newFlags(e, "worker", "[--db FILE|postgres://...] [--workers N] [--policy FILE] [--run-timeout D] [--rescue-after D] [--drain D]")
	db := dbFlag(fs, new(string), "the database of the queue and the audit", true)
	workers := fs.Int("workers", 1, "runs at a time in this process (each with its own browser started in advance)")
	polFile := policyFlag(fs, new(string))
	runTimeout := fs.Duration("run-timeout", runner.DefaultRunDeadline, "bounds one run; serve and every worker of a queue must give the same")
	rescue := fs.Duration("rescue-after", 0, "how long a run's job may stay taken before the queue hands it out again (its worker died); default the run timeout + "+(queue.JobSlack+queue.RescueSlack).String())
	drain := fs.Duration("drain", DefaultWorkerDrain, "on SIGINT or SIGTERM, how long runs may go on before they are interrupted")
	prewarm := fs.Bool("prewarm", true, "start each worker's next browser before its run is taken")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *workers < 1:
		return usageError("--workers must be at least 1")
	}
	if err := checkRunTimes(*runTimeout, *drain); err != nil {
		return err
	}
	ctx, prep, err := startUp(e, watchSignalsOf(e), startSpec{db: *db, policy: *polFile})
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol

	rt, err := bridge.NewRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	launch := logLaunchErrors(e, debugEnabled(), func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return launchOn(ctx, rt, pol)
	})
	stopWarm := func() {}
	if *prewarm {
		// Not the signal's context: a browser being started is closed by stopWarm, after the runs.
		launch, stopWarm = runner.WarmLauncher(context.WithoutCancel(ctx), launch, pol, *workers)
	}
	jr := &runner.JobRunner{
		Policy: pol, Launch: launch, Presets: presets.All(), Store: store, Deadline: *runTimeout, Ledger: store,
		Model: jobModel(pol),
		Launched: func(job queue.Job) {
			fmt.Fprintln(e.stderr, printable(fmt.Sprintf("run %s: taking its browser", job.RunID)))
		},
		Done: func(job queue.Job, ran bool, res coordinator.Result) {
			if ran {
				fmt.Fprintln(e.stderr, printable(fmt.Sprintf("run %s: %s", job.RunID, res.Status)))
			} else {
				fmt.Fprintln(e.stderr, printable(fmt.Sprintf("run %s: begun by an earlier attempt; not run again", job.RunID)))
			}
		},
	}
	// The runs' context: canceled, with the signal's cause, once the drain after a signal is over.
	runsCtx, cancelRuns := context.WithCancelCause(context.Background())
	defer cancelRuns(nil)
	var logger *slog.Logger
	if debugEnabled() {
		logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	q, err := queue.Open(ctx, queue.Config{
		DB: storeDB(*db, store), Workers: *workers, RunTimeout: *runTimeout, RescueAfter: *rescue, Logger: logger,
		Exec: signalled(runsCtx, jr.Exec),
	})
	if err != nil {
		stopWarm()
		return err
	}
	if err := q.Start(context.WithoutCancel(ctx)); err != nil {
		q.Stop(context.Background())
		stopWarm()
		return fmt.Errorf("queue: %w", err)
	}
	fmt.Fprintf(e.stderr, "worker: %d at a time, queue in %s (%s)\n", *workers, audit.RedactURL(storeDB(*db, store)), q.Backend())
	<-ctx.Done()
	fmt.Fprintf(e.stderr, "stopping: no new runs; runs may finish for %s, then they are interrupted\n", *drain)
	t := time.AfterFunc(*drain, func() { cancelRuns(context.Cause(ctx)) })
	err = q.Stop(context.Background()) // the runs end by the drain's end, each recorded
	t.Stop()
	stopWarm()
	if err != nil {
		return fmt.Errorf("queue: stop: %w", err)
	}
	fmt.Fprintln(e.stderr, "stopped")
	return nil
}

// storeDB is the database the queue shares with the audit store: the URL given, or the store's file.
func storeDB(db string, store *audit.Store) string {
	if queue.IsPostgres(db) {
		return db
	}
	return store.Path()
}

// jobModel builds the model a queued run names, as --model does: "" is offline.
func jobModel(pol *policy.Policy) func(spec string) (runner.ModelFunc, error) {
	oa := openAIFromEnv()
	return func(spec string) (runner.ModelFunc, error) {
		if spec == "" {
			spec = modelOffline
		}
		kind, arg, err := parseModelSpec(spec)
		if err != nil {
			return nil, err
		}
		return func() (coordinator.Model, error) { return buildModelWith(kind, arg, pol, oa) }, nil
	}
}

// signalled runs exec under the job's context and ctx, whose cause (a signal's) a run canceled by
// it records: a run that SIGINT or SIGTERM ends is recorded interrupted by that signal.
func signalled(ctx context.Context, exec queue.Exec) queue.Exec {
	return func(jctx context.Context, job queue.Job, attempt int) error {
		jctx, cancel := context.WithCancelCause(jctx)
		defer cancel(nil)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		defer stop()
		return exec(jctx, job, attempt)
	}
}
