package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
)

// *audit.Store is the coordinator's Recorder: the coordinator's records are the audit's.
var _ coordinator.Recorder = (*audit.Store)(nil)

// auditCmd is "browser-agent audit [--db FILE] [--json] [--limit N] [RUN_ID]".
func auditCmd(e *env, args []string) error {
	fs := newFlags(e, "audit", "[--db FILE] [--json] [--limit N] [RUN_ID] | --check")
	dbFile := dbFlag(fs, new(string), "audit database", false)
	asJSON := fs.Bool("json", false, "print JSON on stdout")
	limit := fs.Int("limit", 50, "list at most N runs, newest first (0: all)")
	check := fs.Bool("check", false, "run SQLite's integrity check and list runs without a terminal status; exit 1 when either finds a problem")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *check && fs.NArg() > 0 {
		return usageError("audit --check takes no RUN_ID")
	}
	if fs.NArg() > 1 {
		return usageError("audit takes at most one RUN_ID, got %d arguments", fs.NArg())
	}
	if *limit < 0 {
		return usageError("--limit %d is negative", *limit)
	}
	path := *dbFile
	if path == "" {
		path = audit.DefaultPath()
	}
	// Reading never creates a database.
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if fs.NArg() == 1 {
			return usageError("run %q not found: no audit database at %s", fs.Arg(0), path)
		}
		if *asJSON {
			fmt.Fprintln(e.stdout, `{"runs":[]}`)
		} else {
			fmt.Fprintf(e.stdout, "no runs recorded (no audit database at %s)\n", path)
		}
		return nil
	}
	store, err := openStore(e, path)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	if *check {
		return auditCheck(e, store, *asJSON)
	}
	if fs.NArg() == 1 {
		run, steps, err := store.Run(ctx, fs.Arg(0))
		if errors.Is(err, audit.ErrNotFound) {
			return usageError("run %q not found in %s", fs.Arg(0), path)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return encodeJSON(e.stdout, struct {
				Run   audit.Run    `json:"run"`
				Steps []audit.Step `json:"steps"`
			}{run, orEmpty(steps)})
		}
		printRun(e.stdout, run)
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "N\tTOOL\tVERDICT\tLAYER\tTARGET\tREASON")
		for _, s := range steps {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.N, s.Tool, s.Verdict, s.Layer, orDash(s.Origin+s.Path), printable(s.Reason))
		}
		return tw.Flush()
	}
	runs, err := store.Runs(ctx, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return encodeJSON(e.stdout, struct {
			Runs []audit.Run `json:"runs"`
		}{orEmpty(runs)})
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stdout, "no runs recorded")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tSTATUS\tRECORD\tPRESET\tMODEL\tSTEPS\tSIMULATED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%v\n", r.ID, r.StartedAt.UTC().Format(time.RFC3339), r.Status,
			orDash(r.RecordID), orDash(r.Preset), r.Model, r.StepCount, r.Simulated)
	}
	return tw.Flush()
}

// auditCheck is "audit --check". Opening the store already ended the runs of dead processes; what
// is left open belongs to a process that still runs.
func auditCheck(e *env, store *audit.Store, asJSON bool) error {
	rep, err := store.Check(context.Background())
	if err != nil {
		return err
	}
	if asJSON {
		rep.Open, rep.Alive = orEmpty(rep.Open), orEmpty(rep.Alive)
		if err := encodeJSON(e.stdout, struct {
			audit.CheckReport
			OK bool `json:"ok"`
		}{rep, rep.OK()}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "integrity: %s\n", printable(strings.Join(rep.Integrity, "; ")))
		if len(rep.Open) == 0 {
			fmt.Fprintln(e.stdout, "runs without a terminal status: none")
		}
		for i, r := range rep.Open {
			state := "its process is running"
			if !rep.Alive[i] {
				state = "its process has ended"
			}
			fmt.Fprintf(e.stdout, "run %s: %s since %s, pid %d: %s\n", r.ID, orDash(r.Status), r.StartedAt.UTC().Format(time.RFC3339), r.PID, state)
		}
	}
	if !rep.OK() {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: check failed", store.Path())}
	}
	return nil
}

func printRun(w io.Writer, r audit.Run) {
	fmt.Fprintf(w, "run %s\n", r.ID)
	fmt.Fprintf(w, "  started   %s\n", r.StartedAt.UTC().Format(time.RFC3339Nano))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, "  finished  %s\n", r.FinishedAt.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "  status    %s\n", r.Status)
	fmt.Fprintf(w, "  reason    %s\n", printable(r.Reason))
	fmt.Fprintf(w, "  record    %s\n", orDash(r.RecordID))
	fmt.Fprintf(w, "  preset    %s\n", orDash(r.Preset))
	fmt.Fprintf(w, "  model     %s\n", r.Model)
	if r.Kind == audit.KindMCP || r.Kind == audit.KindGuard {
		fmt.Fprintf(w, "  kind      %s\n", r.Kind)
		fmt.Fprintf(w, "  client    %s\n", printable(r.Client))
	}
	fmt.Fprintf(w, "  simulated %v\n", r.Simulated)
	if r.Wall != "" {
		fmt.Fprintf(w, "  wall      %s\n", printable(r.Wall))
	}
	fmt.Fprintf(w, "  tokens    %d prompt, %d completion over %d model turns, $%.4f\n", r.PromptTokens, r.CompletionTokens, r.ModelTurns, r.CostUSD)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// orEmpty is s, or an empty slice when s is nil: JSON [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
