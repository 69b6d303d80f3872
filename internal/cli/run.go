package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	openaimodel "github.com/browser-agent/browser-agent/coordinator/openai"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/policy"
)

// launchBrowser is the browser "browser-agent run" drives. Tests replace it with a fake.
var launchBrowser coordinator.Launcher = launchBridge

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

// runCmd is "browser-agent run --task TEXT | --preset NAME [flags]": it reads the flags and the
// environment into a RunConfig and runs it (runTask) under the first-signal watch.
func runCmd(e *env, args []string) error {
	fs := newFlags(e, "run", "--task TEXT | --preset NAME [--policy FILE] [--model M] [--json] [--db FILE] [--transcript FILE]")
	cfg := RunConfig{Stdout: e.stdout, Stderr: e.stderr}
	fs.StringVar(&cfg.Task, "task", "", "the task, naming one record ID, e.g. \"Look up SYN-0042\"")
	fs.StringVar(&cfg.Preset, "preset", "", "a preset task: "+strings.Join(presetNames(), ", "))
	policyFlag(fs, &cfg.PolicyFile)
	modelFlag(fs, &cfg.Model)
	fs.BoolVar(&cfg.JSON, "json", false, "print the result as one JSON object on stdout")
	dbFlag(fs, &cfg.DB, "audit database", false)
	fs.StringVar(&cfg.Transcript, "transcript", "", "write every message given to and returned by the model to FILE, as JSON lines")
	fs.BoolVar(&cfg.WithheldList, "withheld-list", false, "debug: at the end of each page read, list every text node withheld (reason, box, characters, tag; never its text) in the tool result (see it with --transcript)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q; quote the task: --task \"Look up SYN-0042\"", fs.Arg(0))
	}
	cfg.UpstreamRoots = os.Getenv(EnvUpstreamRoots)
	cfg.OpenAI = openAIFromEnv()
	cfg.Debug = debugEnabled()
	if err := cfg.check(); err != nil {
		return err
	}
	ctx, sigs, stop := watchSignals(e.stderr)
	defer stop()
	return runTask(ctx, e, cfg, sigs)
}

// RunConfig is one run of "browser-agent run": what its flags and its environment say, passed in
// rather than read from process globals, so that runs sharing a process (the adversarial suite's
// in-process tier) cannot disturb each other.
type RunConfig struct {
	Task, Preset  string // exactly one of them
	PolicyFile    string // "" starts the embedded demo site and uses its policy
	Model         string // offline, script:FILE or openai:NAME
	JSON          bool   // the result as one JSON object on Stdout
	DB            string // the audit store; "" is audit.DefaultPath()
	Transcript    string // "" writes none
	WithheldList  bool   // the debug switch: each page's withheld text nodes listed in its last read result (bridge.WithWithheldList)
	UpstreamRoots string // PEM file of authorities the egress proxy trusts besides the system's ($BROWSER_AGENT_UPSTREAM_ROOTS)
	OpenAI        OpenAIConfig
	Debug         bool                 // launch failures in full on Stderr ($BROWSER_AGENT_DEBUG)
	Launch        coordinator.Launcher // the run's browser; nil: launchBrowser (a driver and Chromium of the run's own)

	Stdout, Stderr io.Writer
}

// OpenAIConfig is where an openai: model sends its calls ($OPENAI_API_KEY, $OPENAI_BASE_URL).
type OpenAIConfig struct{ APIKey, BaseURL string }

func openAIFromEnv() OpenAIConfig {
	return OpenAIConfig{APIKey: os.Getenv("OPENAI_API_KEY"), BaseURL: os.Getenv("OPENAI_BASE_URL")}
}

// check refuses a RunConfig that names no task (or two) or an unknown model spec: a usage error.
func (cfg RunConfig) check() error {
	if (cfg.Task == "") == (cfg.Preset == "") {
		return usageError("give exactly one of --task or --preset")
	}
	if cfg.Preset != "" {
		if _, ok := presets.ByName(cfg.Preset); !ok {
			return usageError("unknown preset %q; presets: %s", cfg.Preset, strings.Join(presetNames(), ", "))
		}
	}
	_, _, err := parseModelSpec(cfg.Model)
	return err
}

// Run runs one task as "browser-agent run" does, through the same code, and returns the exit code
// the command would exit with; what the command would print goes to cfg.Stdout and cfg.Stderr.
// Canceling ctx interrupts the run (exit code ExitSIGINT).
func Run(ctx context.Context, cfg RunConfig) int {
	e := &env{stdin: strings.NewReader(""), stdout: cfg.Stdout, stderr: cfg.Stderr}
	err := cfg.check()
	if err == nil {
		err = runTask(ctx, e, cfg, nil)
	}
	return exitFor(e, "run", err)
}

// runTask is the run itself, shared by runCmd and Run. cfg has passed check.
func runTask(ctx context.Context, e *env, cfg RunConfig, sigs *signals) error {
	var preset coordinator.Preset
	task := cfg.Task
	if cfg.Preset != "" {
		preset, _ = presets.ByName(cfg.Preset)
		task = preset.Task
	}
	kind, arg, err := parseModelSpec(cfg.Model)
	if err != nil {
		return err
	}
	if cfg.Debug {
		initStartup(e)
	}
	ra := coordinator.RunArgs{Task: task, Preset: preset.Name, ModelName: cfg.Model, EndOnDenial: preset.Simulated}
	rep := func(res coordinator.Result) error { return report(e, res, cfg.JSON, sigs) }

	// Write ahead: nothing runs unaudited. A store that cannot be opened ends the run before any
	// browser or model work; its result is printed but cannot be recorded.
	store, err := openStoreBounded(ctx, e, cfg.DB)
	if err != nil {
		return rep(startFailed(ctx, coordinator.New(nil), ra, err))
	}
	defer store.Close()

	var transcript io.Writer
	if cfg.Transcript != "" {
		f, err := os.OpenFile(cfg.Transcript, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
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
	pol, stopSite, err := sitePolicy(ctx, e, cfg.PolicyFile, task)
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
		model, err := buildModelBounded(ctx, kind, arg, pol, cfg.OpenAI)
		if err == nil && preset.Simulated {
			model = preset.Model(model, pol.Sites()[0].Origin)
		}
		return model, err
	}
	// The coordinator records the run as running, then launches the browser, and closes it before
	// it records the end. The full launch error (command line, browser logs) goes to stderr only
	// with cfg.Debug; the run's reason is coordinator.LaunchReason's.
	launch := cfg.Launch
	if launch == nil {
		launch = launchBrowser
		if cfg.WithheldList {
			launch = launchWithheldList(cfg.UpstreamRoots)
		}
	}
	ra.Launch = logLaunchErrors(e, cfg.Debug, launch)
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

// buildModel makes the model with the OpenAI settings of the environment.
func buildModel(kind, arg string, pol *policy.Policy) (coordinator.Model, error) {
	return buildModelWith(kind, arg, pol, openAIFromEnv())
}

// buildModelWith makes the model. An OpenAI model the policy does not approve is refused before
// any client exists, so nothing reaches the network.
func buildModelWith(kind, arg string, pol *policy.Policy, oa OpenAIConfig) (coordinator.Model, error) {
	switch kind {
	case modelOffline:
		return offline.New(), nil
	case prefixScript:
		return coordinator.LoadScript(arg)
	default:
		m, err := openaimodel.NewApproved(arg, pol.ModelApproved, openaimodel.WithAPIKey(oa.APIKey), openaimodel.WithBaseURL(oa.BaseURL))
		var ue *openaimodel.UnapprovedError
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%w (approved: %s)", err, strings.Join(pol.ApprovedModels(), ", "))
		}
		if err != nil {
			return nil, err
		}
		if oa.APIKey == "" && oa.BaseURL == "" {
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

type runJSON struct {
	RunID     string                 `json:"run_id"`
	Status    coordinator.Status     `json:"status"`
	Reason    string                 `json:"reason"`
	Note      string                 `json:"note,omitempty"`
	RecordID  string                 `json:"record_id"`
	Preset    string                 `json:"preset,omitempty"`
	Answer    *coordinator.Answer    `json:"answer"`
	Conflicts []coordinator.Conflict `json:"conflicts,omitempty"`
	Evidence  []coordinator.Evidence `json:"evidence"`
	Steps     []coordinator.Step     `json:"steps"`
	Model     string                 `json:"model"`
	Simulated bool                   `json:"simulated"`
	Usage     coordinator.Usage      `json:"usage"`
}

func printJSON(w io.Writer, res coordinator.Result) error {
	out := runJSON{
		RunID: res.RunID, Status: res.Status, Reason: res.Reason, Note: res.Note, RecordID: res.RecordID, Preset: res.Preset,
		Answer: res.Answer, Conflicts: res.Conflicts, Model: res.Model, Simulated: res.Simulated, Usage: res.Usage,
		Evidence: orEmpty(res.Evidence), Steps: orEmpty(res.Steps),
	}
	return encodeJSON(w, out)
}

// printSummary writes the result for a person.
func printSummary(w io.Writer, res coordinator.Result) {
	p := func(format string, args ...any) { fmt.Fprintln(w, printable(fmt.Sprintf(format, args...))) }
	switch res.Status {
	case coordinator.StatusAnswered:
		a := res.Answer
		p("answered: %s", a.RecordID)
		labels := a.Labels(presets.FieldOrder)
		width := 0
		for _, l := range labels {
			width = max(width, len(l))
		}
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
	p("run %s, model %s, %d %s, %d model turns, %d input and %d output tokens", res.RunID, res.Model, len(res.Steps), steps,
		res.Usage.ModelTurns, res.Usage.PromptTokens, res.Usage.CompletionTokens)
}
