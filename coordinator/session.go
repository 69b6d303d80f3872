package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/policy"
)

// ToolCheckAnswer is the tool a Session's caller uses for what a run's final message does: it
// checks a claimed answer against the evidence extracted in the session.
const ToolCheckAnswer = "check_answer"

// RuleTimeBudget is the rule of a call refused because the session's time budget is spent.
const RuleTimeBudget = "time budget"

// CheckAnswerSpec returns the spec of check_answer under pol: the answer object of a run's final
// message.
func CheckAnswerSpec(pol *policy.Policy) ToolSpec {
	d, _ := json.Marshal("the record, e.g. " + recordExample(pol))
	return ToolSpec{
		Name: ToolCheckAnswer,
		Description: "Check a claimed answer against the fields extracted in this session, as the coordinator checks a run's final answer. " +
			"Returns answered (every claimed value matches a field extracted from a cited source about the record), uncertain (sources conflict) or blocked, with the reason and the evidence.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"record_id":{"type":"string","minLength":1,"description":` + string(d) + `},` +
			`"fields":{"type":"object","additionalProperties":{"type":"string"},"minProperties":1,"maxProperties":50,"description":"label to claimed value"},` +
			`"sources":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":20,"description":"the URLs the values were extracted from"}},` +
			`"required":["record_id","fields","sources"],"additionalProperties":false}`),
	}
}

// Session runs the tool calls of one run one at a time, for a caller that is its own model (an
// MCP client). Every call goes through exactly the checks of Run: the same strict arguments, the
// same policy decisions, the same browser error mapping, the same step budget and the same
// evidence. It is recorded as one run. A Session is safe for concurrent use; calls are serialized.
type Session struct {
	mu       sync.Mutex
	r        *run
	deadline time.Time
	human    bool     // a credential page was met
	last     *verdict // the last answer check
}

// SessionArgs are the inputs of a session.
type SessionArgs struct {
	Browser   Browser
	ModelName string // recorded as the run's model, e.g. the MCP client's name and version
}

// CallResult is what one tool call of a session produced.
type CallResult struct {
	Step Step
	// Content is the tool message, ResultPreface and one JSON object, as a run gives it to its
	// model. It is "" when Stop is set: nothing from that page may be returned.
	Content string
	// Stop is set when a run would end here: StatusHuman (a credential page), StatusBlocked or
	// StatusError (the browser is gone). StopReason says why; it holds no page text.
	Stop       Status
	StopReason string
	// Spent is set when the call was refused because the session's step or time budget is spent:
	// no later call of this session can run, so its caller ends it (an MCP server starts a new
	// one for the next call).
	Spent bool
}

// StartSession records the start of a run and returns its session. A recorder failure is
// returned; nothing was started then.
func (c *Coordinator) StartSession(ctx context.Context, a SessionArgs) (*Session, error) {
	if c.pol == nil {
		return nil, fmt.Errorf("coordinator: no policy")
	}
	r := c.newRun(RunArgs{Browser: a.Browser, ModelName: a.ModelName})
	if w, ok := a.Browser.(Walled); ok {
		r.wall = w.Wall()
	}
	if err := r.begin(ctx); err != nil {
		return nil, err
	}
	return &Session{r: r, deadline: c.clock().Add(c.deadline)}, nil
}

// RunID is the session's run ID in the audit store.
func (s *Session) RunID() string { return s.r.res.RunID }

// Call checks one tool call and, only when every check passes, asks the browser, as one step of a
// run. Past the step budget or the time budget the call is refused and recorded.
func (s *Session) Call(ctx context.Context, call ToolCall) (CallResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.r
	if r.finished {
		return CallResult{}, fmt.Errorf("coordinator: session %s has ended", r.res.RunID)
	}
	maxSteps := r.c.pol.Limits().MaxSteps
	var o outcome
	spent := true
	r.steps++
	switch {
	case r.steps > maxSteps:
		o = refused(call.Name, policy.LayerCoordinator, RuleBudget, fmt.Sprintf("step budget exhausted (max_steps %d)", maxSteps))
	case !r.c.clock().Before(s.deadline):
		o = refused(call.Name, policy.LayerCoordinator, RuleTimeBudget, fmt.Sprintf("session time budget (%s) exhausted", r.c.deadline))
	default:
		spent = false
		cctx, cancel := context.WithDeadline(ctx, s.deadline)
		o = r.exec(cctx, call)
		cancel()
	}
	if err := r.addStep(ctx, o.step); err != nil {
		return CallResult{}, fmt.Errorf("audit store: %w", err)
	}
	if o.stop == StatusHuman {
		s.human = true
	}
	res := CallResult{Step: o.step, Content: o.content, Stop: o.stop, StopReason: o.stopReason, Spent: spent}
	if o.stop != "" {
		res.Content = ""
	}
	return res, nil
}

// AnswerCheck is the decision on a claimed answer.
type AnswerCheck struct {
	Status    Status     `json:"status"` // answered, uncertain or blocked
	Reason    string     `json:"reason"`
	Answer    *Answer    `json:"answer,omitempty"`    // the accepted answer, normalized; answered only
	Conflicts []Conflict `json:"conflicts,omitempty"` // uncertain only
	// Evidence is what this session extracted about the claimed record: page data.
	Evidence []Evidence `json:"evidence"`
}

// CheckAnswer checks a claimed answer, given as the JSON object {record_id, fields, sources},
// against the evidence of this session, exactly as Run checks a final answer. Bad arguments give
// a *ArgError and are recorded as a refused step; a decision is recorded as an answer step.
func (s *Session) CheckAnswer(ctx context.Context, raw json.RawMessage) (AnswerCheck, Step, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.r
	if r.finished {
		return AnswerCheck{}, Step{}, fmt.Errorf("coordinator: session %s has ended", r.res.RunID)
	}
	start := r.c.clock()
	r.steps++
	a, recordID, err := parseAnswerArgs(r.c.pol, raw)
	if err != nil {
		o := refusedArgs(ToolCheckAnswer, err.Error())
		if aerr := r.addStep(ctx, o.step); aerr != nil {
			return AnswerCheck{}, Step{}, fmt.Errorf("audit store: %w", aerr)
		}
		return AnswerCheck{}, o.step, &ArgError{Tool: ToolCheckAnswer, Reason: err.Error()}
	}
	v := checkAnswer(r.c.pol, recordID, a, r.res.Evidence)
	step := Step{Step: audit.Step{Tool: ToolCheckAnswer, Duration: r.c.clock().Sub(start), Entry: policy.Entry{Verdict: policy.Deny, Reason: v.reason, Rule: RuleAnswer, Layer: policy.LayerCoordinator}}}
	if v.status == StatusAnswered {
		step.Verdict = policy.Allow
	}
	if err := r.addStep(ctx, step); err != nil {
		return AnswerCheck{}, Step{}, fmt.Errorf("audit store: %w", err)
	}
	r.res.RecordID = recordID
	s.last, s.human = &v, false
	out := AnswerCheck{Status: v.status, Reason: v.reason, Answer: v.answer, Conflicts: v.conflicts, Evidence: []Evidence{}}
	for _, e := range r.res.Evidence {
		if e.RecordID == recordID {
			out.Evidence = append(out.Evidence, e)
		}
	}
	return out, step, nil
}

// parseAnswerArgs strictly parses check_answer's arguments: the keys of a final answer, no
// others, each once, with the same value checks as a run's final message.
func parseAnswerArgs(pol *policy.Policy, raw json.RawMessage) (Answer, string, error) {
	if len(raw) > maxFinalBytes {
		return Answer{}, "", fmt.Errorf("arguments longer than %d bytes", maxFinalBytes)
	}
	if _, err := parseObjectAny(raw, "record_id", "fields", "sources"); err != nil {
		return Answer{}, "", err
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		s = "{}"
	}
	f, err := parseFinal(s)
	if err != nil {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "missing key "); ok {
			msg = "missing argument " + rest
		}
		return Answer{}, "", fmt.Errorf("%s", msg)
	}
	if f.Answer == nil {
		return Answer{}, "", fmt.Errorf("arguments must be {record_id, fields, sources}")
	}
	t, err := pol.ParseTask(f.Answer.RecordID)
	if err != nil {
		return Answer{}, "", fmt.Errorf("argument \"record_id\": %s", strings.TrimPrefix(err.Error(), "task rejected: "))
	}
	if !strings.EqualFold(strings.TrimSpace(f.Answer.RecordID), t.RecordID) {
		return Answer{}, "", fmt.Errorf("argument \"record_id\" must be one record ID alone, e.g. %s", recordExample(pol))
	}
	return *f.Answer, t.RecordID, nil
}

// End finishes the session's run and records it: answered or uncertain as the last answer check
// said, human_action_required when a credential page was met since, else blocked; the recorded
// reason ends with reason (why the session ended: a spent budget, the client's request, ...).
// It is safe to call more than once; later calls do nothing.
func (s *Session) End(ctx context.Context, reason string) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.r
	status := StatusBlocked
	switch {
	case s.human:
		status, reason = StatusHuman, "a credential page needed a person; "+reason
	case s.last != nil && s.last.status != StatusBlocked:
		status, reason = s.last.status, s.last.reason+"; "+reason
		r.res.Answer, r.res.Conflicts = s.last.answer, s.last.conflicts
	case s.last != nil:
		reason = "the last answer check: " + s.last.reason + "; " + reason
	default:
		reason = "no answer checked; " + reason
	}
	return r.finish(ctx, status, reason)
}
