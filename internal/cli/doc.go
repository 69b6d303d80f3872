// Package cli implements the browser-agent subcommands: run, check-url, serve, mcp, audit and
// setup. cmd/browser-agent is a thin main around Main.
//
// It is the top layer: it reads flags and files, opens the audit store, launches the guarded
// browser (internal/guarded) and hands them to the coordinator, web or mcpserver. Bad
// input gets an ExitError naming what was wrong, before anything starts.
//
// Key types: Main (the entry point), ExitError (an exit code and its message), RunConfig and
// Run (one run as "browser-agent run" does it), and SharedLauncher (a coordinator.Launcher on a
// shared driver; a subcommand gets its browser through one, and tests substitute one).
package cli
