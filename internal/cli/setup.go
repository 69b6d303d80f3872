package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/policy"
)

// openStore opens the audit store at path, or at audit.DefaultPath when path is "".
func openStore(path string) (*audit.Store, error) {
	if path == "" {
		path = audit.DefaultPath()
	}
	return audit.Open(path)
}

// sitePolicy returns the policy of FILE or, when file is "", starts the embedded demo site
// in-process and returns its policy. stop closes the site; it is never nil. A FILE that does not
// load gives a *policy.LoadError.
func sitePolicy(ctx context.Context, e *env, file string) (pol *policy.Policy, stop func(), err error) {
	if file != "" {
		pol, err = policy.Load(file)
		return pol, func() {}, err
	}
	srv, err := startDemo(ctx)
	if err != nil {
		return nil, func() {}, fmt.Errorf("start the demo site: %w", err)
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
