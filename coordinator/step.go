package coordinator

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// stepJSON is a Step as its JSON shows it: the shared decision record (n, verdict, rule, reason,
// layer; origin and path as the audit keeps them), the tool, the URL shown, the time it took in
// milliseconds, whether it was simulated, and the Outcome of a final answer's step. It holds
// metadata only, never page text. (The audit store's rows have their own JSON: audit.Step's.)
type stepJSON struct {
	policy.Entry
	Tool       string `json:"tool"`
	URL        string `json:"url,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Simulated  bool   `json:"simulated,omitempty"`
	// Outcome labels the final answer step by how the run ends (answered, uncertain or blocked),
	// so that the answer check's verdict is not read as a policy denial. "" for every other step.
	Outcome Status `json:"outcome,omitempty"`
}

// MarshalJSON writes the step as the web API, the page, recorded runs and "browser-agent run
// --json" show it (stepJSON).
func (s Step) MarshalJSON() ([]byte, error) {
	return json.Marshal(stepJSON{
		Entry: s.Entry, Tool: s.Tool, URL: s.URL, DurationMS: s.Duration.Milliseconds(), Simulated: s.Simulated,
		Outcome: s.Outcome(),
	})
}

// UnmarshalJSON reads a step MarshalJSON wrote (a recorded run's): the duration to the
// millisecond; the outcome is derived again, not read.
func (s *Step) UnmarshalJSON(b []byte) error {
	var j stepJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = newStep(j.Tool, j.URL, j.Entry)
	s.Duration, s.Simulated = time.Duration(j.DurationMS)*time.Millisecond, j.Simulated
	return nil
}

// Outcome is how the run ends by the answer check of a final answer step: an allowed answer is
// answered, one the sources disagree on is uncertain, any other refused final message ends
// blocked. It is "" for every other step.
func (s Step) Outcome() Status {
	if s.Tool != ToolAnswer || s.Rule != RuleAnswer {
		return ""
	}
	switch {
	case s.Verdict == policy.Allow:
		return StatusAnswered
	case strings.HasPrefix(s.Reason, reasonConflict):
		return StatusUncertain
	default:
		return StatusBlocked
	}
}
