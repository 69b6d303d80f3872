package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// Browser is what the coordinator needs from a browser: open a URL, read the current page's
// visible text, list its links and extract its labelled fields. It never clicks, types, selects
// or runs script. The real implementation is *bridge.Session.
type Browser interface {
	// Open navigates to url, deciding every redirect hop. A credential page gives
	// browse.ErrCredentialRequired and nothing else; a denied hop gives a *browse.DeniedError.
	Open(ctx context.Context, url string) (browse.Page, error)
	// Read returns the chunk of the current page's visible text that starts at offset.
	Read(ctx context.Context, offset int) (browse.Chunk, error)
	// Links lists the current page's anchors.
	Links(ctx context.Context) ([]browse.Link, error)
	// Fields returns the current page's labelled fields.
	Fields(ctx context.Context) ([]browse.Field, error)
}

// SoFar is implemented by browsers that prove a long page a chunk at a time (bridge.Session):
// the links and fields of the part proven so far, and whether it is the whole page. open_url and
// search_site hand out a page's first chunk with them, so that a long page's first answer does
// not wait for the proof of its end; list_links and extract_fields give the whole page's.
type SoFar interface {
	LinksSoFar(ctx context.Context) ([]browse.Link, bool, error)
	FieldsSoFar(ctx context.Context) ([]browse.Field, bool, error)
}

// EgressLog is implemented by browsers that record the requests decided beneath the tools: by the
// bridge's request routes in the browser, or by the egress proxy at the network layer. After each
// step the coordinator takes what was decided since the last one and records it, under that
// step's number, as tool ToolRequest.
type EgressLog interface {
	TakeDecisions() []policy.Entry
}

// ToolRequest is the Tool of an audit record for one request decided beneath a tool call.
const ToolRequest = "request"

// Status is how a run ended.
type Status string

// Run statuses.
const (
	StatusAnswered  Status = "answered"              // every claimed value is backed by evidence
	StatusUncertain Status = "uncertain"             // sources disagree on a claimed field
	StatusBlocked   Status = "blocked"               // no answer: after a denial, an unsupported answer, or a budget
	StatusHuman     Status = "human_action_required" // a credential page: a person must take over
	StatusRejected  Status = "rejected"              // bad task, unapproved model or bad policy; nothing ran
	StatusError     Status = "error"                 // the program, the model or the audit store failed
	// StatusInterrupted: a signal or a shutdown ended the run (see Interrupt), or, in the audit
	// store, its process ended before its end was recorded (reason "crashed: ...").
	StatusInterrupted Status = "interrupted"
)

// Interrupt is the cause to cancel a run's context with (context.WithCancelCause) to end the run
// interrupted: the browser is closed and the end recorded, with reason "interrupted: " + Why.
type Interrupt struct {
	Why string // e.g. "SIGTERM received" or "the server is stopping"
}

func (e *Interrupt) Error() string { return "interrupted: " + e.Why }

// Launcher starts the browser a run (or an MCP session) drives, confined by pol, and returns it
// with what stops it. The real one launches a guarded Chromium (internal/guarded through
// internal/cli); tests use fakes. The command line, serve (web) and the MCP server all take one.
type Launcher func(ctx context.Context, pol *policy.Policy) (Browser, io.Closer, error)

// Rules of the coordinator's own decisions.
const (
	RuleArguments = "tool arguments" // the strict argument check
	RuleBudget    = "step budget"
	RuleAnswer    = "answer check" // the final answer against the evidence
)

// ToolAnswer is the Tool of the step that records the model's final message.
const ToolAnswer = "answer"

// Step is one tool call (or the final answer) and what was decided about it: the audit's step
// record (the shared decision record policy.Entry, whose Origin and Path are URL's as the audit
// keeps them; the tool; URL, the canonical URL decided or acted on; the time it took; the bytes of
// the tool result given to the model), which is what the Recorder gets, and whether the call was
// scripted in place of the model's. It holds metadata only: never page text, field values or
// anything the page sent. Its JSON (step.go) is the one view of a step: the web API, the page,
// recorded runs and "browser-agent run --json" show it.
type Step struct {
	audit.Step
	Simulated bool
}

// newStep is a step of tool on url, decided as e says.
func newStep(tool, url string, e policy.Entry) Step {
	return Step{Step: audit.Step{Tool: tool, URL: url, Entry: e}}
}

// Evidence is one labelled value extracted from an allowed page in this run. The coordinator, not
// the model, stamps its source URL and retrieval time.
type Evidence struct {
	URL         string    `json:"url"`
	RetrievedAt time.Time `json:"retrieved_at"`
	Label       string    `json:"label"`
	Value       string    `json:"value"`
	RecordID    string    `json:"record_id"` // the record the page is about (see aboutRecord); "" when none
}

// Answer is a model's claimed answer.
type Answer struct {
	RecordID string            `json:"record_id"`
	Fields   map[string]string `json:"fields"`
	Sources  []string          `json:"sources"`
}

// SourcedValue is one value of a field and where it was extracted.
type SourcedValue struct {
	Value string `json:"value"`
	URL   string `json:"url"`
}

// Conflict is a claimed field on which the extracted evidence disagrees.
type Conflict struct {
	Label  string         `json:"label"`
	Values []SourcedValue `json:"values"`
}

// Result is how a run ended and what it found.
type Result struct {
	RunID    string
	Task     string
	RecordID string
	Preset   string
	Model    string
	Status   Status
	// Reason says why the run ended. It names fields, URLs, rules and policy reasons, never page
	// text or field values, so it is safe for the audit store.
	Reason string
	// Note is the model's own text when it could not answer (shown to the user, never audited).
	Note      string
	Answer    *Answer    // set only when Status is answered
	Conflicts []Conflict // set only when Status is uncertain
	Evidence  []Evidence
	Steps     []Step
	Simulated bool // some model turn was scripted in place of the model's
	Usage     Usage
	StartedAt time.Time
	EndedAt   time.Time
}

// Recorder stores runs and their steps durably (the audit store). Each call must be durable
// before it returns; a failing Recorder stops the run.
type Recorder interface {
	// BeginRun stores a started run and returns its ID.
	BeginRun(ctx context.Context, r audit.Run) (string, error)
	AddStep(ctx context.Context, s audit.Step) error
	FinishRun(ctx context.Context, r audit.Run) error
}

// DefaultDeadline bounds a whole run when WithDeadline is not given.
const DefaultDeadline = 5 * time.Minute

// Coordinator runs tasks under one policy. It is safe for concurrent use when its options are.
type Coordinator struct {
	pol        *policy.Policy
	rec        Recorder
	clock      func() time.Time
	progress   func(Step)
	transcript io.Writer
	deadline   time.Duration
	signIn     SignInFunc
}

// Takeover is what a person did while holding a takeover lease: counts only, never what they
// typed or where they clicked.
type Takeover struct {
	Duration              time.Duration
	Clicks, Keys, Submits int
}

// SignInFunc is called when a page opened by a tool holds a credential field. It waits (bounded
// by ctx and its own deadline) for a person to take over the browser and sign in, and reports
// what they did and whether the run continues (ok). It is called at most once per run.
type SignInFunc func(ctx context.Context, url string) (t Takeover, ok bool)

// WithSignIn makes a credential page wait for a person (serve) instead of ending the run at once
// (the command line). Without it, or when f reports !ok, the run ends human_action_required.
func WithSignIn(f SignInFunc) Option { return func(c *Coordinator) { c.signIn = f } }

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithRecorder records every run and step in r.
func WithRecorder(r Recorder) Option { return func(c *Coordinator) { c.rec = r } }

// WithClock sets the clock that stamps evidence and runs (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Coordinator) { c.clock = now } }

// WithProgress calls f as each step is decided, before the next model turn.
func WithProgress(f func(Step)) Option { return func(c *Coordinator) { c.progress = f } }

// WithTranscript writes every message given to and returned by the model to w, one JSON object a
// line, exactly as it was sent.
func WithTranscript(w io.Writer) Option { return func(c *Coordinator) { c.transcript = w } }

// WithDeadline bounds the whole run (default DefaultDeadline; d <= 0 means the default). A run
// past it ends blocked.
func WithDeadline(d time.Duration) Option { return func(c *Coordinator) { c.deadline = d } }

// New returns a Coordinator that decides with pol. pol may be nil only to Reject.
func New(pol *policy.Policy, opts ...Option) *Coordinator {
	c := &Coordinator{pol: pol, clock: time.Now, deadline: DefaultDeadline}
	for _, o := range opts {
		o(c)
	}
	if c.deadline <= 0 {
		c.deadline = DefaultDeadline
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	return c
}

// RunArgs are the inputs of one run. New fields may be added; the zero value of each is safe.
type RunArgs struct {
	Task    string
	Preset  string // recorded; "" when the task was typed
	Model   Model
	Browser Browser
	// NewModel makes the model when Model is nil. Run calls it only once the task has passed the
	// policy, and gives it the policy (which approves models); an error rejects the run with its
	// text, before any browser work.
	NewModel func(pol *policy.Policy) (Model, error)
	// ModelName is recorded when Model is nil (a model not made yet, or that could not be made).
	ModelName string
	// EndOnDenial ends the run blocked at the first denied or refused tool call instead of
	// returning the denial to the model. The simulated presets set it.
	EndOnDenial bool
	// Launch starts the browser when Browser is nil. Run calls it after the run is recorded as
	// running (write ahead: the audit knows of every browser), and closes what it returns before
	// the end of the run is recorded.
	Launch Launcher
}

// Reject records and returns a run that was rejected before any browser or model work: a bad
// task, an unapproved model or a bad policy. reason names what was wrong.
func (c *Coordinator) Reject(ctx context.Context, a RunArgs, reason string) Result {
	return c.end(ctx, a, StatusRejected, reason)
}

// Fail records and returns a run that failed before any model work, e.g. because the browser
// could not be launched. reason names what failed.
func (c *Coordinator) Fail(ctx context.Context, a RunArgs, reason string) Result {
	return c.end(ctx, a, StatusError, reason)
}

// Interrupted records and returns a run that an interrupt (a signal, a shutdown) ended before any
// browser or model work.
func (c *Coordinator) Interrupted(ctx context.Context, a RunArgs, in *Interrupt) Result {
	return c.end(ctx, a, StatusInterrupted, in.Error())
}

func (c *Coordinator) end(ctx context.Context, a RunArgs, status Status, reason string) Result {
	r := c.newRun(a)
	if err := r.begin(ctx); err != nil {
		return r.res
	}
	return r.finish(ctx, status, reason)
}

// Run runs one task to its end and returns the result. It never returns without a status: a
// failure of the model, the browser or the recorder is a status too.
//
// Run owns the checks before any work, in this order: the policy, the task (parsed once, under the
// policy's record identifier), the model (NewModel, which the policy's approval governs); only
// when they pass does it launch the browser. A run that fails a check is recorded as rejected and
// nothing else happens.
func (c *Coordinator) Run(ctx context.Context, a RunArgs) Result {
	r := c.newRun(a)
	// The run's deadline, or the caller's when it comes first (the reason names which ended it).
	r.limit = fmt.Sprintf("run deadline (%s)", c.deadline)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < c.deadline {
		r.limit = fmt.Sprintf("run deadline (%s, the caller's)", time.Until(d).Round(time.Second))
	}
	var rejected string
	switch {
	case r.taskErr != nil:
		rejected = r.taskErr.Error() // "no policy", or a *policy.TaskError naming what was wrong
	case a.Model == nil && a.NewModel == nil:
		rejected = "no model"
	case a.Model == nil:
		m, err := a.NewModel(c.pol)
		if err != nil {
			rejected = err.Error()
		} else {
			r.a.Model, r.res.Model = m, m.Name()
		}
	}
	if err := r.begin(ctx); err != nil {
		return r.res
	}
	if in := (*Interrupt)(nil); rejected != "" && errors.As(context.Cause(ctx), &in) {
		// The checks were cut short by an interrupt (a signal while the model was being made).
		return r.finish(ctx, StatusInterrupted, in.Error())
	}
	if rejected != "" {
		return r.finish(ctx, StatusRejected, rejected)
	}
	task := r.task
	r.res.Task = task.Text
	r.redact = c.pol.Redactor(policy.NewRedactionKey(), task.RecordID)
	if a.Browser == nil && a.Launch == nil {
		return r.finish(ctx, StatusError, "no browser")
	}
	if a.Browser == nil {
		b, closer, err := a.Launch(ctx, c.pol)
		if err != nil {
			if ctx.Err() != nil {
				status, reason := r.ctxStatus(ctx)
				return r.finish(ctx, status, reason)
			}
			return r.finish(ctx, StatusError, LaunchReason(err))
		}
		r.a.Browser, r.closer = b, closer
	}
	if w, ok := r.a.Browser.(Walled); ok {
		r.wall = w.Wall()
	}
	rctx, cancel := context.WithTimeout(ctx, c.deadline)
	defer cancel()
	status, reason := r.loop(rctx, task)
	if status == "" { // the recorder or the transcript failed; finish already ran
		return r.res
	}
	if rctx.Err() != nil && ctx.Err() == nil && status == StatusError {
		status, reason = StatusBlocked, r.deadlineName()+" exceeded"
	}
	if in := (*Interrupt)(nil); status == StatusError && errors.As(context.Cause(ctx), &in) {
		// A part failed because the run was being interrupted: the interrupt is why it ended.
		status, reason = StatusInterrupted, in.Error()
	}
	return r.finish(ctx, status, reason)
}

// run is the state of one run.
type run struct {
	c        *Coordinator
	a        RunArgs
	res      Result
	msgs     []Message
	sent     int // messages already written to the transcript
	steps    int
	denial   string // reason of the last denied or refused call, "" when none
	page     *curPage
	finished bool
	signedIn bool // the sign-in hook was asked once: a second credential page ends the run
	// redact turns every URL a step or a request decision carries into what may be stored and
	// printed (see policy.Redactor): set once the task's record identifier is known.
	redact *policy.Redactor
	// shown are the canonical URLs this run was presented with (allowed links listed, pages the
	// site ended on); listed are the URLs by number of the last result that listed links
	// (list_links, open_url, search_site). open_url opens only these and the policy's routes
	// filled with the task's record identifier.
	shown  map[string]bool
	listed map[int]string
	closer io.Closer // the browser Run launched; closed before the end is recorded
	limit  string    // the deadline that ends the run: "run deadline (5m0s)", or the caller's
	wall   string    // the browser's line about the operating system's wall (Walled), for the audit
	// task is the run's task, parsed once by newRun under the policy; taskErr says why it was
	// not accepted.
	task    policy.Task
	taskErr error
}

// closeBrowser stops the browser Run launched.
func (r *run) closeBrowser() {
	if r.closer != nil {
		r.closer.Close()
		r.closer = nil
	}
}

// curPage is the page the browser is on, as far as the coordinator knows.
type curPage struct {
	url            string
	next           int
	more           bool
	title, heading string // what the browser read with the page: see aboutRecord
}

func (c *Coordinator) newRun(a RunArgs) *run {
	name := a.ModelName
	if a.Model != nil {
		name = a.Model.Name()
	}
	r := &run{c: c, a: a, res: Result{
		Task:      a.Task,
		Preset:    a.Preset,
		Model:     name,
		StartedAt: c.clock().UTC(),
	}}
	if c.pol == nil {
		r.taskErr = errors.New("no policy")
	} else if r.task, r.taskErr = c.pol.ParseTask(a.Task); r.taskErr == nil {
		r.res.RecordID = r.task.RecordID
	}
	return r
}

func (r *run) record() audit.Run {
	return audit.Run{
		ID:               r.res.RunID,
		StartedAt:        r.res.StartedAt,
		FinishedAt:       r.res.EndedAt,
		RecordID:         r.res.RecordID,
		Preset:           r.res.Preset,
		Model:            r.res.Model,
		Status:           string(r.res.Status),
		Reason:           r.auditText(r.res.Reason),
		StepCount:        len(r.res.Steps),
		PromptTokens:     r.res.Usage.PromptTokens,
		CompletionTokens: r.res.Usage.CompletionTokens,
		ModelTurns:       r.res.Usage.ModelTurns,
		CostUSD:          r.res.Usage.CostUSD,
		Simulated:        r.res.Simulated,
		Wall:             r.wall,
	}
}

// begin records the run's start. On failure the run is finished as an error.
func (r *run) begin(ctx context.Context) error {
	if r.c.rec == nil {
		r.res.RunID = newID()
		return nil
	}
	// Recorded even when ctx is already canceled: a run interrupted at once still has its row.
	id, err := r.c.rec.BeginRun(context.WithoutCancel(ctx), r.record())
	if err != nil {
		r.res.RunID = newID()
		r.res.Status, r.res.Reason = StatusError, "audit store: "+err.Error()
		r.res.EndedAt = r.c.clock().UTC()
		r.finished = true
		return err
	}
	r.res.RunID = id
	return nil
}

// finish records the end of the run. If the recorder fails, the run is an error.
func (r *run) finish(ctx context.Context, status Status, reason string) Result {
	if r.finished {
		return r.res
	}
	r.finished = true
	// The browser and its proxy stop before the end is recorded: a run recorded as ended has no
	// browser left.
	r.closeBrowser()
	r.res.Status, r.res.Reason = status, reason
	if status != StatusAnswered {
		r.res.Answer = nil
	}
	if status != StatusUncertain {
		r.res.Conflicts = nil
	}
	r.res.EndedAt = r.c.clock().UTC()
	if r.c.rec != nil {
		// The run is recorded even when ctx was canceled, so that it never stays open.
		if err := r.c.rec.FinishRun(context.WithoutCancel(ctx), r.record()); err != nil {
			r.res.Status, r.res.Reason = StatusError, "audit store: "+err.Error()
			r.res.Answer, r.res.Conflicts = nil, nil
		}
	}
	return r.res
}

// fail ends the run as an error because the recorder or the transcript failed.
func (r *run) fail(ctx context.Context, reason string) (Status, string) {
	r.finish(ctx, StatusError, reason)
	return "", ""
}

// addStep numbers, records and reports a step.
func (r *run) addStep(ctx context.Context, s Step) error {
	s.N = len(r.res.Steps) + 1
	s.Duration = max(s.Duration, 0)
	if r.redact != nil {
		// From here the step is recorded, reported and returned: it keeps no string that a page
		// or the model chose.
		s.URL, s.Rule = r.redact.URL(s.URL), r.redact.Rule(s.Rule)
	}
	s.Origin, s.Path = policy.OriginPath(s.URL)
	r.res.Steps = append(r.res.Steps, s)
	if r.c.rec != nil {
		rec := s.Step
		rec.RunID, rec.Tool, rec.Reason = r.res.RunID, auditTool(s.Tool), r.auditText(s.Reason)
		rec.URL = "" // Origin and Path are set from it above
		err := r.c.rec.AddStep(context.WithoutCancel(ctx), rec)
		if err != nil {
			return err
		}
		if err := r.recordEgress(ctx, s.N); err != nil {
			return err
		}
	}
	if r.c.progress != nil {
		r.c.progress(s)
	}
	return nil
}

// recordEgress records the requests the browser and the proxy decided during step n.
func (r *run) recordEgress(ctx context.Context, n int) error {
	log, ok := r.a.Browser.(EgressLog)
	if !ok {
		return nil
	}
	for _, d := range log.TakeDecisions() {
		if r.redact != nil {
			d.Origin, d.Path = policy.OriginPath(r.redact.URL(d.URL()))
			d.Rule = r.redact.Rule(d.Rule)
		} else {
			d.Origin, d.Path = "", "" // no task, no redactor: nothing a page chose is kept
		}
		d.N = n
		err := r.c.rec.AddStep(context.WithoutCancel(ctx), audit.Step{RunID: r.res.RunID, Tool: ToolRequest, Entry: d})
		if err != nil {
			return err
		}
	}
	return nil
}

// flush writes the messages not yet in the transcript.
func (r *run) flush() error {
	if r.c.transcript == nil {
		r.sent = len(r.msgs)
		return nil
	}
	for ; r.sent < len(r.msgs); r.sent++ {
		b, err := json.Marshal(r.msgs[r.sent])
		if err != nil {
			return err
		}
		if _, err := r.c.transcript.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// loop talks with the model until it answers or the run must end. It returns the status and reason;
// a "" status means the run was already finished as an error.
func (r *run) loop(ctx context.Context, task policy.Task) (Status, string) {
	maxSteps := r.c.pol.Limits().MaxSteps
	r.msgs = []Message{
		{Role: RoleSystem, Content: SystemPrompt(r.c.pol)},
		{Role: RoleUser, Content: userPrompt(task)},
	}
	corrected := false
	for {
		if r.steps >= maxSteps {
			return StatusBlocked, fmt.Sprintf("step budget exhausted (max_steps %d)", maxSteps)
		}
		if err := ctx.Err(); err != nil {
			return r.ctxStatus(ctx)
		}
		if err := r.flush(); err != nil {
			return r.fail(ctx, "transcript: "+err.Error())
		}
		turn, err := r.a.Model.Next(ctx, cloneMessages(r.msgs), Tools(r.c.pol))
		if err != nil {
			if ctx.Err() != nil {
				return r.ctxStatus(ctx)
			}
			return StatusError, modelReason(err)
		}
		turn.Usage.ModelTurns = 1
		r.res.Usage = r.res.Usage.Add(turn.Usage)
		if turn.Simulated {
			r.res.Simulated = true
		}
		msg := turn.Message
		msg.Role = RoleAssistant
		msg.ToolCallID, msg.Name = "", ""
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", len(r.msgs), i+1)
			}
		}
		r.msgs = append(r.msgs, msg)
		if err := r.flush(); err != nil {
			return r.fail(ctx, "transcript: "+err.Error())
		}

		if len(msg.ToolCalls) > 0 {
			for _, call := range msg.ToolCalls {
				r.steps++
				if r.steps > maxSteps {
					// Record the first call past the budget as refused, and end: the rest of the
					// turn's calls are never looked at.
					reason := fmt.Sprintf("step budget exhausted (max_steps %d)", maxSteps)
					o := refused(call.Name, policy.LayerCoordinator, RuleBudget, reason)
					o.step.Simulated = turn.Simulated
					if err := r.addStep(ctx, o.step); err != nil {
						return r.fail(ctx, "audit store: "+err.Error())
					}
					return StatusBlocked, reason
				}
				o := r.exec(ctx, call)
				o.step.Simulated = turn.Simulated
				if err := r.addStep(ctx, o.step); err != nil {
					return r.fail(ctx, "audit store: "+err.Error())
				}
				if o.stop != "" {
					// Nothing from this page reaches the model: the run ends here.
					return o.stop, o.stopReason
				}
				if o.step.Layer == policy.LayerBrowser && o.step.Verdict != policy.Allow && ctx.Err() == nil {
					if err := browserGone(r.a.Browser); err != nil {
						return StatusError, "browser: " + err.Error()
					}
				}
				r.msgs = append(r.msgs, Message{Role: RoleTool, ToolCallID: call.ID, Name: o.step.Tool, Content: o.content})
				if o.step.Verdict != policy.Allow {
					r.denial = o.step.Reason
					if r.a.EndOnDenial {
						return StatusBlocked, fmt.Sprintf("%s denied (%s): %s", o.step.Tool, o.step.Layer, o.step.Reason)
					}
				}
				if ctx.Err() != nil {
					return r.ctxStatus(ctx)
				}
			}
			continue
		}

		// A final message.
		r.steps++
		start := r.c.clock()
		fin, perr := parseFinal(msg.Content)
		if perr != nil {
			step := Step{Step: audit.Step{Tool: ToolAnswer, Entry: policy.Entry{Verdict: policy.Deny, Reason: "malformed final message: " + perr.Error(), Rule: RuleAnswer, Layer: policy.LayerCoordinator}}, Simulated: turn.Simulated}
			if err := r.addStep(ctx, step); err != nil {
				return r.fail(ctx, "audit store: "+err.Error())
			}
			if corrected {
				return StatusError, "malformed final message after a correction: " + perr.Error()
			}
			corrected = true
			r.msgs = append(r.msgs, Message{Role: RoleUser, Content: correction(perr, recordExample(r.c.pol))})
			continue
		}
		if fin.CannotAnswer != nil {
			r.res.Note = policy.Clip(*fin.CannotAnswer, 500)
			reason := "model could not answer"
			if r.denial != "" {
				reason += " after a denial (" + r.denial + ")"
			}
			step := Step{Step: audit.Step{Tool: ToolAnswer, Duration: r.c.clock().Sub(start), Entry: policy.Entry{Verdict: policy.Deny, Reason: reason, Rule: RuleAnswer, Layer: policy.LayerCoordinator}}, Simulated: turn.Simulated}
			if err := r.addStep(ctx, step); err != nil {
				return r.fail(ctx, "audit store: "+err.Error())
			}
			return StatusBlocked, reason
		}
		v := checkAnswer(r.c.pol, task.RecordID, *fin.Answer, r.res.Evidence)
		step := Step{Step: audit.Step{Tool: ToolAnswer, Duration: r.c.clock().Sub(start), Entry: policy.Entry{Verdict: policy.Deny, Reason: v.reason, Rule: RuleAnswer, Layer: policy.LayerCoordinator}}, Simulated: turn.Simulated}
		if v.status == StatusAnswered {
			step.Verdict = policy.Allow
			r.res.Answer = v.answer
		}
		r.res.Conflicts = v.conflicts
		if err := r.addStep(ctx, step); err != nil {
			return r.fail(ctx, "audit store: "+err.Error())
		}
		return v.status, v.reason
	}
}

// deadlineName names the deadline that ends the run (the run's own until Run set limit).
func (r *run) deadlineName() string {
	if r.limit == "" {
		return fmt.Sprintf("run deadline (%s)", r.c.deadline)
	}
	return r.limit
}

// ctxStatus is how a run ends when its context is done: interrupted when the caller canceled it
// with an *Interrupt, blocked past the deadline, an error when the caller canceled otherwise.
func (r *run) ctxStatus(ctx context.Context) (Status, string) {
	var in *Interrupt
	if errors.As(context.Cause(ctx), &in) {
		return StatusInterrupted, in.Error()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return StatusBlocked, r.deadlineName() + " exceeded"
	}
	return StatusError, "run canceled"
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	copy(out, msgs)
	return out
}

// newID returns a random run ID for runs that no recorder numbered.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}
