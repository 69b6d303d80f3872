package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/startup"
	"github.com/browser-agent/browser-agent/policy"
)

// The start-up phases of a command, each bounded by startup.Timeout and ended at once by a
// signal: a part that does not answer, or is missing, ends the command with a reason that names
// it, where it was looked for and what fixes it.

// EnvDemoAddr names the loopback address the embedded demo site listens on (default
// 127.0.0.1:0, a free port): set it to open the site in a browser at a known address.
const EnvDemoAddr = "BROWSER_AGENT_DEMO_ADDR"

// demoAddr is the embedded demo site's address: EnvDemoAddr, else a free loopback port.
func demoAddr() string {
	if a := os.Getenv(EnvDemoAddr); a != "" {
		return a
	}
	return "127.0.0.1:0"
}

// fixDoctor ends every fix: doctor checks each part and says what to do.
const fixDoctor = "see browser-agent doctor"

// initStartup logs the phases on stderr with BROWSER_AGENT_DEBUG.
func initStartup(e *env) {
	if debugEnabled() {
		startup.Logf = func(format string, args ...any) { fmt.Fprintf(e.stderr, "debug: "+format+"\n", args...) }
	}
}

// startFailed is the result of a run that could not start: interrupted when a signal ended the
// phase (ctx's cause), else an error with err's text. c records it when it has a recorder.
func startFailed(ctx context.Context, c *coordinator.Coordinator, ra coordinator.RunArgs, err error) coordinator.Result {
	var in *coordinator.Interrupt
	if errors.As(context.Cause(ctx), &in) {
		return c.Interrupted(ctx, ra, in)
	}
	return c.Fail(ctx, ra, err.Error())
}

// openStoreBounded is openStore as a bounded phase: a store whose lock is never released, or
// whose disk does not answer, ends the command.
func openStoreBounded(ctx context.Context, e *env, path string) (*audit.Store, error) {
	if path == "" {
		path = audit.DefaultPath()
	}
	fix := "check its disk, stop what holds it (fuser " + path + ") or give another --db; " + fixDoctor
	open := func() (*audit.Store, error) { return openStore(e, path) }
	store, err := startup.Do(ctx, "audit store", "audit store "+path, fix, open)
	var in *coordinator.Interrupt
	if err != nil && errors.As(context.Cause(ctx), &in) {
		// A signal during this phase still leaves the run's row: the store is opened (within the
		// phase's bound, not the signal's) so that the interruption can be recorded.
		store, err = startup.Do(context.WithoutCancel(ctx), "audit store, to record the interruption", "audit store "+path, fix, open)
	}
	return store, err
}

// policyFileError is a policy file that cannot be read (not a mistake in it): the command fails
// (exit 1) instead of rejecting the input.
type policyFileError struct {
	file string
	err  error
}

func (e *policyFileError) Error() string { return e.Failure() + "; " + e.Remedy() }

// Failure says which file and why it cannot be read; Remedy what fixes it.
func (e *policyFileError) Failure() string {
	return fmt.Sprintf("policy file %s cannot be read (%v)", e.file, e.err)
}

func (e *policyFileError) Remedy() string { return "give a readable file to --policy; " + fixDoctor }

func (e *policyFileError) Unwrap() error { return e.err }

// loadPolicyFile loads the policy of file as a bounded phase. A file that is not a regular file
// (a FIFO would block for ever) or that this user may not read is a *policyFileError; a mistake
// in the file is policy.Load's *policy.LoadError.
func loadPolicyFile(ctx context.Context, file string) (*policy.Policy, error) {
	return startup.Do(ctx, "policy", "policy file "+file, "give a policy file on a local disk; "+fixDoctor,
		func() (*policy.Policy, error) {
			if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
				return nil, &policyFileError{file, errors.New("not a regular file")}
			}
			pol, err := policy.Load(file)
			if errors.Is(err, fs.ErrPermission) {
				return nil, &policyFileError{file, fs.ErrPermission}
			}
			return pol, err
		})
}

// startDemoBounded starts the embedded demo site as a bounded phase. An address it cannot listen
// on says which and what to do.
func startDemoBounded(ctx context.Context) (*demosite.Server, error) {
	addr := demoAddr()
	srv, err := startup.Do(ctx, "demo site", "the demo site", fixDoctor, func() (*demosite.Server, error) { return startDemo(ctx) })
	if err != nil && ctx.Err() == nil {
		var te *startup.TimeoutError
		if errors.As(err, &te) {
			return nil, err
		}
		why := err.Error()
		if strings.Contains(why, "address already in use") {
			why = "address already in use"
		}
		return nil, fmt.Errorf("demo site cannot listen on %s (%s); fix: stop what listens there (ss -ltnp) or set %s=127.0.0.1:0 for a free port; %s",
			addr, why, EnvDemoAddr, fixDoctor)
	}
	return srv, err
}

// buildModelBounded is buildModel as a bounded phase (a script file on a hung disk or a FIFO).
func buildModelBounded(ctx context.Context, kind, arg string, pol *policy.Policy, oa OpenAIConfig) (coordinator.Model, error) {
	return startup.Do(ctx, "model settings", "model "+kind+arg, "give a model file on a local disk; "+fixDoctor,
		func() (coordinator.Model, error) { return buildModelWith(kind, arg, pol, oa) })
}

// logStartFailure writes the whole story of a start-up failure on stderr (every place looked, the
// cause): the run's reason holds its short line.
func logStartFailure(e *env, err error) {
	var sf coordinator.StartFailure
	if err != nil && errors.As(err, &sf) && sf.Error() != sf.StartReason() {
		fmt.Fprintf(e.stderr, "browser-agent: %s\n", sf.Error())
	}
}

// The flags the commands that start up a run share, each worded once: where the store is, the
// policy and the model. Each registers its flag on fs into p and returns p.

// dbFlag registers --db: holds says what the database holds for the command; queue, that it may
// be a PostgreSQL URL (the commands that use the run queue).
func dbFlag(fs *flag.FlagSet, p *string, holds string, queue bool) *string {
	where := "default $BROWSER_AGENT_DB, else " + audit.DefaultPath()
	if queue {
		fs.StringVar(p, "db", "", holds+": an SQLite file ("+where+") or a postgres:// URL")
	} else {
		fs.StringVar(p, "db", "", holds+" ("+where+")")
	}
	return p
}

// policyFlag registers --policy for a command that, without it, serves the embedded demo site.
func policyFlag(fs *flag.FlagSet, p *string) *string {
	fs.StringVar(p, "policy", "", "policy file (default: serve the embedded demo site in-process and use its policy)")
	return p
}

// modelFlag registers --model.
func modelFlag(fs *flag.FlagSet, p *string) *string {
	fs.StringVar(p, "model", modelOffline, "offline, script:FILE or openai:NAME (NAME must be approved by the policy)")
	return p
}
