package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/web"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	openaimodel "github.com/browser-agent/browser-agent/coordinator/openai"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/policy"
)

// Launcher starts the browser a run drives and returns it with what stops it.
type Launcher func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error)

// launchBrowser is the browser "browser-agent run" drives. Tests replace it with a fake.
var launchBrowser Launcher = launchBridge

// startDemo starts the embedded demo site for a run without --policy. Tests wrap it.
var startDemo = func(ctx context.Context) (*demosite.Server, error) {
	return demosite.Start(ctx, demoAddr(), "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
}

// Model specs of --model.
const (
	modelOffline = offline.Name
	prefixScript = "script:"
	prefixOpenAI = "openai:"
)

// runCmd is "browser-agent run --task TEXT | --preset NAME [flags]".
func runCmd(e *env, args []string) error {
	fs := newFlags(e, "run", "--task TEXT | --preset NAME [--policy FILE] [--model M] [--json] [--db FILE] [--transcript FILE]")
	taskFlag := fs.String("task", "", "the task, naming one record ID, e.g. \"Look up SYN-0042\"")
	presetFlag := fs.String("preset", "", "a preset task: "+strings.Join(presetNames(), ", "))
	polFile := fs.String("policy", "", "policy file (default: start the embedded demo site and use its policy)")
	modelSpec := fs.String("model", modelOffline, "offline, script:FILE or openai:NAME (NAME must be approved by the policy)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object on stdout")
	dbFile := fs.String("db", "", "audit database (default $BROWSER_AGENT_DB, else "+audit.DefaultPath()+")")
	transcriptFile := fs.String("transcript", "", "write every message given to and returned by the model to FILE, as JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q; quote the task: --task \"Look up SYN-0042\"", fs.Arg(0))
	}
	var preset presets.Preset
	task := *taskFlag
	switch {
	case (*taskFlag == "") == (*presetFlag == ""):
		return usageError("give exactly one of --task or --preset")
	case *presetFlag != "":
		p, ok := presets.ByName(*presetFlag)
		if !ok {
			return usageError("unknown preset %q; presets: %s", *presetFlag, strings.Join(presetNames(), ", "))
		}
		preset, task = p, p.Task
	}
	kind, arg, err := parseModelSpec(*modelSpec)
	if err != nil {
		return err
	}

	ctx, sigs, stop := watchSignals(e.stderr)
	defer stop()
	initStartup(e)
	ra := coordinator.RunArgs{Task: task, Preset: preset.Name, ModelName: *modelSpec, EndOnDenial: preset.Simulated}
	rep := func(res coordinator.Result) error { return report(e, res, *asJSON, sigs) }

	// Write ahead: nothing runs unaudited. A store that cannot be opened ends the run before any
	// browser or model work; its result is printed but cannot be recorded.
	store, err := openStoreBounded(ctx, e, *dbFile)
	if err != nil {
		return rep(startFailed(ctx, coordinator.New(nil), ra, err))
	}
	defer store.Close()

	var transcript io.Writer
	if *transcriptFile != "" {
		f, err := os.OpenFile(*transcriptFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
		defer f.Close()
		transcript = f
	}

	opts := []coordinator.Option{
		coordinator.WithRecorder(store),
		coordinator.WithProgress(func(s coordinator.Step) { printStep(e.stderr, s) }),
	}
	if transcript != nil {
		opts = append(opts, coordinator.WithTranscript(transcript))
	}

	// The coordinator rejects a bad task or model before any browser or model work; a policy file
	// that does not load is rejected here, and the demo site starts only for a task its policy
	// accepts.
	pol, stopSite, err := sitePolicy(ctx, e, *polFile, task)
	var in *coordinator.Interrupt
	var te *policy.TaskError
	switch {
	case isLoadError(err):
		return rep(coordinator.New(nil, opts...).Reject(ctx, ra, "policy: "+err.Error()))
	case errors.As(err, &te):
		return rep(coordinator.New(nil, opts...).Reject(ctx, ra, err.Error()))
	case err != nil && errors.As(context.Cause(ctx), &in):
		return rep(coordinator.New(nil, opts...).Interrupted(ctx, ra, in))
	case err != nil: // the demo site did not start, or the policy file cannot be read
		return rep(startFailed(ctx, coordinator.New(nil, opts...), ra, err))
	}
	defer stopSite()
	ra.NewModel = func(pol *policy.Policy) (coordinator.Model, error) {
		model, err := buildModelBounded(ctx, kind, arg, pol)
		if err == nil && preset.Simulated {
			model = preset.Model(model, pol.Sites()[0].Origin)
		}
		return model, err
	}
	// The coordinator records the run as running, then launches the browser, and closes it before
	// it records the end.
	ra.Launch = func(ctx context.Context) (coordinator.Browser, io.Closer, error) {
		return launchLogged(ctx, e, pol)
	}
	return rep(coordinator.New(pol, opts...).Run(ctx, ra))
}

// launchLogged launches the browser; the full launch error (command line, browser logs) goes to
// stderr only with BROWSER_AGENT_DEBUG set. The run's reason is coordinator.LaunchReason's.
func launchLogged(ctx context.Context, e *env, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	b, closer, err := launchBrowser(ctx, pol)
	if err != nil && debugEnabled() {
		fmt.Fprintf(e.stderr, "debug: browser launch: %v\n", err)
	}
	logStartFailure(e, err)
	return b, closer, err
}

func presetNames() []string {
	var names []string
	for _, p := range presets.All() {
		names = append(names, p.Name)
	}
	return names
}

// parseModelSpec checks the form of --model: offline, script:FILE or openai:NAME.
func parseModelSpec(spec string) (kind, arg string, err error) {
	switch {
	case spec == modelOffline:
		return modelOffline, "", nil
	case strings.HasPrefix(spec, prefixScript) && len(spec) > len(prefixScript):
		return prefixScript, strings.TrimPrefix(spec, prefixScript), nil
	case strings.HasPrefix(spec, prefixOpenAI) && len(spec) > len(prefixOpenAI):
		return prefixOpenAI, strings.TrimPrefix(spec, prefixOpenAI), nil
	}
	return "", "", usageError("unknown --model %q; use offline, script:FILE or openai:NAME", spec)
}

// buildModel makes the model. An OpenAI model the policy does not approve is refused before any
// client exists, so nothing reaches the network.
func buildModel(kind, arg string, pol *policy.Policy) (coordinator.Model, error) {
	switch kind {
	case modelOffline:
		return offline.New(), nil
	case prefixScript:
		return coordinator.LoadScript(arg)
	default:
		m, err := openaimodel.NewApproved(arg, pol.ModelApproved)
		var ue *openaimodel.UnapprovedError
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%w (approved: %s)", err, strings.Join(pol.ApprovedModels(), ", "))
		}
		if err != nil {
			return nil, err
		}
		if os.Getenv("OPENAI_API_KEY") == "" && os.Getenv("OPENAI_BASE_URL") == "" {
			// Without a key, api.openai.com refuses every call: say so before any network.
			return nil, fmt.Errorf("openai:%s: OPENAI_API_KEY is not set (for a local OpenAI-compatible server that needs no key, set OPENAI_BASE_URL)", arg)
		}
		return m, nil
	}
}

// exitCode maps a run status to the process exit code. An interrupted run exits with the code of
// the signal that interrupted it.
func exitCode(s coordinator.Status, sigs *signals) int {
	switch s {
	case coordinator.StatusInterrupted:
		if sigs == nil {
			return ExitSIGINT
		}
		return sigs.Code()
	case coordinator.StatusAnswered:
		return ExitOK
	case coordinator.StatusUncertain:
		return ExitUncertain
	case coordinator.StatusBlocked:
		return ExitBlocked
	case coordinator.StatusHuman:
		return ExitHuman
	case coordinator.StatusRejected:
		return ExitUsage
	default:
		return ExitFailure
	}
}

// report prints the result and returns the error that carries its exit code. The result is already
// on stdout, so the error has no message of its own.
func report(e *env, res coordinator.Result, asJSON bool, sigs *signals) error {
	var err error
	if asJSON {
		err = printJSON(e.stdout, res)
	} else {
		printSummary(e.stdout, res)
	}
	if err != nil {
		return err
	}
	if code := exitCode(res.Status, sigs); code != ExitOK {
		return &ExitError{Code: code, Err: errors.New("")}
	}
	return nil
}

// printStep writes one progress line: step number, tool, target, verdict and reason. It holds no
// page text.
func printStep(w io.Writer, s coordinator.Step) {
	line := fmt.Sprintf("step %d: %s", s.N, s.Tool)
	if s.URL != "" {
		line += " " + s.URL
	}
	line += ": " + s.Verdict.String()
	if s.Reason != "" {
		line += " (" + s.Reason + ")"
	}
	if s.Simulated {
		line += " [simulated]"
	}
	fmt.Fprintln(w, printable(line))
}

// printable replaces control characters, so that text from a page or a model cannot drive the
// terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' || r == '\u2028' || r == '\u2029' {
			return '\uFFFD'
		}
		return r
	}, s)
}

type evidenceJSON struct {
	URL         string    `json:"url"`
	RetrievedAt time.Time `json:"retrieved_at"`
	Label       string    `json:"label"`
	Value       string    `json:"value"`
	RecordID    string    `json:"record_id"`
}

type runJSON struct {
	RunID     string                 `json:"run_id"`
	Status    coordinator.Status     `json:"status"`
	Reason    string                 `json:"reason"`
	Note      string                 `json:"note,omitempty"`
	RecordID  string                 `json:"record_id"`
	Preset    string                 `json:"preset,omitempty"`
	Answer    *coordinator.Answer    `json:"answer"`
	Conflicts []coordinator.Conflict `json:"conflicts,omitempty"`
	Evidence  []evidenceJSON         `json:"evidence"`
	Steps     []web.StepJSON         `json:"steps"`
	Model     string                 `json:"model"`
	Simulated bool                   `json:"simulated"`
	Usage     coordinator.Usage      `json:"usage"`
}

func printJSON(w io.Writer, res coordinator.Result) error {
	out := runJSON{
		RunID: res.RunID, Status: res.Status, Reason: res.Reason, Note: res.Note, RecordID: res.RecordID, Preset: res.Preset,
		Answer: res.Answer, Conflicts: res.Conflicts, Model: res.Model, Simulated: res.Simulated, Usage: res.Usage,
		Evidence: []evidenceJSON{}, Steps: []web.StepJSON{},
	}
	for _, ev := range res.Evidence {
		out.Evidence = append(out.Evidence, evidenceJSON(ev))
	}
	for _, s := range res.Steps {
		out.Steps = append(out.Steps, web.NewStepJSON(s))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// printSummary writes the result for a person.
func printSummary(w io.Writer, res coordinator.Result) {
	p := func(format string, args ...any) { fmt.Fprintln(w, printable(fmt.Sprintf(format, args...))) }
	switch res.Status {
	case coordinator.StatusAnswered:
		a := res.Answer
		p("answered: %s", a.RecordID)
		labels := make([]string, 0, len(a.Fields))
		width := 0
		for l := range a.Fields {
			labels = append(labels, l)
			width = max(width, len(l))
		}
		slices.Sort(labels)
		slices.SortStableFunc(labels, func(x, y string) int { return fieldOrder(x) - fieldOrder(y) })
		for _, l := range labels {
			p("  %-*s  %s", width, l, a.Fields[l])
		}
		p("sources:")
		for _, s := range a.Sources {
			p("  %s", s)
		}
	case coordinator.StatusUncertain:
		p("uncertain: %s", res.Reason)
		for _, c := range res.Conflicts {
			p("  %s:", c.Label)
			for _, v := range c.Values {
				p("    %q from %s", v.Value, v.URL)
			}
		}
	default:
		p("%s: %s", res.Status, res.Reason)
		if res.Note != "" {
			p("model said: %s", res.Note)
		}
	}
	switch {
	case res.Simulated && res.Preset != "":
		p("simulated: one scripted tool call was substituted for the model's turn, because a real model refuses it; the policy's decision on it is real")
	case res.Simulated:
		p("simulated: the model's turns were scripted")
	}
	steps := "steps"
	if len(res.Steps) == 1 {
		steps = "step"
	}
	p("run %s, model %s, %d %s", res.RunID, res.Model, len(res.Steps), steps)
}

// fieldOrder keeps the demo site's field order first, then the rest alphabetically.
func fieldOrder(label string) int {
	order := []string{"Record ID", "Name", "Status", "Region", "Owner", "Updated"}
	if i := slices.Index(order, label); i >= 0 {
		return i - len(order)
	}
	return 0
}
