package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes, shared by every subcommand.
const (
	ExitOK        = 0 // success; for run: answered
	ExitFailure   = 1 // the program failed
	ExitUsage     = 2 // usage error, or the input was rejected
	ExitUncertain = 3 // run: sources conflict
	ExitBlocked   = 4 // run: ended without an answer after a denial or on a budget; check-url: some URL denied
	ExitHuman     = 5 // run: a credential page needs a human
)

// ExitError carries an exit code through an error chain. Exit codes are chosen in one place, Main.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks a usage mistake: exit code 2.
func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// env is what a subcommand gets.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type command struct {
	summary string
	run     func(e *env, args []string) error
}

var commands = map[string]command{
	"check-url": {"decide URLs with a policy and print one JSON object per URL", checkURLCmd},
	"policy":    {"policy validate FILE: check a policy file", policyCmd},
	"run":       {"research one record with the agent", runCmd},
	"audit":     {"list runs, or one run's steps, from the audit store", auditCmd},
	"serve":     {"serve the live demo: page, API, step stream and public-run limits", serveCmd},
	"record":    {"run the presets and write them as recorded runs for serve", recordCmd},
	"mcp":       {"serve the five guarded read tools, check_answer and new_session to an MCP client (stdio or --http)", mcpCmd},
	"guard":     {"serve another browser MCP server's tools (Playwright MCP) behind the policy: guard -- COMMAND", guardCmd},
	"queue-ui":  {"River UI over the run queue (loopback only): jobs by state, attempts, errors", queueUICmd},
	"worker":    {"take runs from the queue (SQLite file or PostgreSQL) and run each once, until SIGINT or SIGTERM", workerCmd},
	"doctor":    {"check what run would use (driver, node, Chromium, audit store, policy) and say what fixes a failure", doctorCmd},
}

// Main runs the command line args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "browser-agent: unknown command %q; run \"browser-agent help\"\n", args[0])
		return ExitUsage
	}
	return exitFor(e, args[0], c.run(e, args[1:]))
}

// exitFor is the exit code of command name's err, whose message (if any) it writes to stderr.
func exitFor(e *env, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	code := ExitFailure
	var xe *ExitError
	if errors.As(err, &xe) {
		code = xe.Code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(e.stderr, "browser-agent %s: %s\n", name, msg)
	}
	return code
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "usage: browser-agent COMMAND [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "browser-agent COMMAND -h" for a command's flags.`)
}

// newFlags makes a FlagSet that reports to stderr and returns errors instead of exiting.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: browser-agent %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses and turns a flag error into a usage error (the flag package already printed it).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(interleave(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &ExitError{Code: ExitUsage, Err: errors.New("")}
	}
	return nil
}

// parseFlagsOnly is parseFlags for a command that takes flags only: a positional argument is a
// usage error naming it.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// interleave moves flags that follow positional arguments to the front, so that
// "check-url URL --policy F" works as a user expects.
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, append([]string{"--"}, pos...)...)
}
