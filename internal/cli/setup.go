package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/policy"
)

// openStore opens the audit store at path, or at audit.DefaultPath when path is "". Opening ends
// the runs that dead processes left running (audit.RecoverCrashed); each is named on stderr. An
// error names the store: "audit store: PATH: read-only; ...".
func openStore(e *env, path string) (*audit.Store, error) {
	if path == "" {
		path = audit.DefaultPath()
	}
	s, err := audit.Open(path)
	if err != nil {
		if debugEnabled() {
			var we *audit.WriteError
			if errors.As(err, &we) {
				fmt.Fprintln(e.stderr, "debug: "+we.Detail())
			}
		}
		return nil, fmt.Errorf("audit store: %w", err)
	}
	for _, r := range s.Recovered() {
		fmt.Fprintf(e.stderr, "audit: run %s was left running; marked %s (%s)\n", r.ID, r.Status, r.Reason)
	}
	return s, nil
}

// sitePolicy returns the policy of FILE or, when file is "", starts the embedded demo site
// in-process and returns its policy. stop closes the site; it is never nil. A FILE that does not
// load gives a *policy.LoadError. When task is not "", the demo site starts only for a task the
// embedded policy accepts: otherwise the *policy.TaskError is returned and nothing started.
func sitePolicy(ctx context.Context, e *env, file, task string) (pol *policy.Policy, stop func(), err error) {
	if file != "" {
		pol, err = loadPolicyFile(ctx, file)
		return pol, func() {}, err
	}
	if task != "" {
		// The record identifier's shape does not depend on where the site listens.
		embedded, err := loadPolicy("", DefaultDemoOrigin)
		if err != nil {
			return nil, func() {}, err
		}
		if _, err := embedded.ParseTask(task); err != nil {
			return nil, func() {}, err
		}
	}
	srv, err := startDemoBounded(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	fmt.Fprintf(e.stderr, "demo site at %s\n", srv.URL)
	stop = func() { srv.Close() }
	if pol, err = loadPolicy("", srv.URL); err != nil {
		stop()
		return nil, func() {}, err
	}
	return pol, stop, nil
}

// isLoadError reports whether err is a policy file that did not load: the user's input, not a
// failure of the program.
func isLoadError(err error) bool {
	var le *policy.LoadError
	return errors.As(err, &le)
}

// prepared is what serve, record, worker, mcp and guard share: the audit store and the policy
// (with the demo site started when there is no policy file), opened by startUp under the
// command's signal watch.
type prepared struct {
	store   *audit.Store
	pol     *policy.Policy
	stop    func() // stops the demo site, if one was started
	unwatch func() // ends the signal watch
}

// Close stops the demo site, if one was started, closes the store and ends the signal watch.
func (p *prepared) Close() {
	p.stop()
	p.store.Close()
	p.unwatch()
}

// startSpec is what a command's start-up reads from its flags: --db and --policy, the notice
// printed before the demo site starts in place of a policy file (mcp, guard), and the model to
// check against the policy (record, serve: kind and arg from parseModelSpec; kind "" checks none).
type startSpec struct {
	db, policy, notice string
	kind, arg          string
}

// startUp is the one start-up of the commands that run runs with a store and a policy (serve,
// record, worker, mcp, guard), once their flags are read: the context of watch (the command's
// first-signal watch, whose stop it takes on), the store and the policy (openPrepared) and, when
// s.kind is set, the model checked against the policy, so that an unapproved or unreadable model
// is refused before any run (a usage error). On an error all it started is stopped; otherwise the
// prepared's Close stops it all, the signal watch last.
func startUp(e *env, watch func() (context.Context, context.CancelFunc), s startSpec) (context.Context, *prepared, error) {
	ctx, unwatch := watch()
	p, err := openPrepared(ctx, e, s.db, s.policy, s.notice)
	if err != nil {
		unwatch()
		return nil, nil, err
	}
	p.unwatch = unwatch
	if s.kind != "" {
		if _, err := buildModel(s.kind, s.arg, p.pol); err != nil {
			p.Close()
			return nil, nil, &ExitError{Code: ExitUsage, Err: err}
		}
	}
	return ctx, p, nil
}

// watchSignalsOf is the first-signal watch of a command (watchSignals), as startUp takes it.
func watchSignalsOf(e *env) func() (context.Context, context.CancelFunc) {
	return func() (context.Context, context.CancelFunc) {
		ctx, _, stop := watchSignals(e.stderr)
		return ctx, stop
	}
}

// openPrepared opens the store (a bounded phase) and loads the policy (a bad policy file is a
// usage error), for startUp. Without a policy file it starts the demo site, printing notice (when
// set) first.
func openPrepared(ctx context.Context, e *env, dbFile, polFile, notice string) (*prepared, error) {
	store, err := openStoreBounded(ctx, e, dbFile)
	if err != nil {
		return nil, err
	}
	if polFile == "" && notice != "" {
		fmt.Fprintln(e.stderr, notice)
	}
	pol, stopSite, err := sitePolicy(ctx, e, polFile, "")
	if err != nil {
		store.Close()
		if isLoadError(err) {
			return nil, &ExitError{Code: ExitUsage, Err: err}
		}
		return nil, err
	}
	return &prepared{store: store, pol: pol, stop: stopSite, unwatch: func() {}}, nil
}
