package cli

import "errors"

// runCmd is "browser-agent run". The coordinator lands it.
func runCmd(e *env, args []string) error {
	return errors.New("not built yet: the coordinator has not landed")
}

// auditCmd is "browser-agent audit".
func auditCmd(e *env, args []string) error {
	return errors.New("not built yet: the audit store has not landed")
}
