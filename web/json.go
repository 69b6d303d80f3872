package web

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/policy"
)

// StepJSON is one step as the API, the page, recorded runs and "browser-agent run --json" show
// it: the shared decision record (n, verdict, rule, reason, layer; origin and path as the audit
// keeps them), the tool and the URL shown. It holds metadata only, never page text.
type StepJSON struct {
	policy.Entry
	Tool       string `json:"tool"`
	URL        string `json:"url,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Simulated  bool   `json:"simulated,omitempty"`
	// Outcome labels the final answer step by how the run ends (answered, uncertain or blocked),
	// so that the answer check's verdict is not read as a policy denial. "" for every other step.
	Outcome string `json:"outcome,omitempty"`
}

// NewStepJSON is s as StepJSON shows it.
func NewStepJSON(s coordinator.Step) StepJSON {
	return withOutcome(StepJSON{
		Entry: s.Entry, Tool: s.Tool, URL: s.URL, DurationMS: s.Duration.Milliseconds(), Simulated: s.Simulated,
	})
}

// conflictReason begins the answer check's reason when the sources disagree (coordinator's
// uncertain verdict).
const conflictReason = "sources conflict on "

// withOutcome sets the Outcome of an answer-check step: an allowed answer is answered, one the
// sources disagree on is uncertain, any other refused final message ends blocked.
func withOutcome(s StepJSON) StepJSON {
	if s.Tool != coordinator.ToolAnswer || s.Rule != coordinator.RuleAnswer {
		return s
	}
	switch {
	case s.Verdict == policy.Allow:
		s.Outcome = string(coordinator.StatusAnswered)
	case strings.HasPrefix(s.Reason, conflictReason):
		s.Outcome = string(coordinator.StatusUncertain)
	default:
		s.Outcome = string(coordinator.StatusBlocked)
	}
	return s
}

// FieldJSON is one answered field.
type FieldJSON struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// SourceJSON is a page evidence was extracted from, with the time the coordinator retrieved it.
type SourceJSON struct {
	URL         string    `json:"url"`
	RetrievedAt time.Time `json:"retrieved_at"`
	Cited       bool      `json:"cited"` // the answer names it as a source
}

// ResultJSON is how a run ended, as the API, the page and recorded runs show it. It is built from
// coordinator.Result only: the answer's fields and the evidence values are shown, nothing else the
// page held.
type ResultJSON struct {
	RunID     string                 `json:"run_id"` // the audit store's run ID
	Status    coordinator.Status     `json:"status"`
	Reason    string                 `json:"reason"`
	Note      string                 `json:"note,omitempty"` // the model's own words when it could not answer
	Task      string                 `json:"task"`
	RecordID  string                 `json:"record_id"`
	Preset    string                 `json:"preset,omitempty"`
	Model     string                 `json:"model"`
	Fields    []FieldJSON            `json:"fields"`  // the answer's fields, in the site's order
	Sources   []SourceJSON           `json:"sources"` // every page evidence came from, first retrieval first
	Conflicts []coordinator.Conflict `json:"conflicts"`
	Evidence  []coordinator.Evidence `json:"evidence"`
	Steps     []StepJSON             `json:"steps"`
	Simulated bool                   `json:"simulated"`
	Usage     coordinator.Usage      `json:"usage"`
	StartedAt time.Time              `json:"started_at"`
	EndedAt   time.Time              `json:"ended_at"`
}

// fieldOrder is the demo site's field order; other labels follow alphabetically.
var fieldOrder = []string{"Record ID", "Name", "Status", "Region", "Owner", "Updated"}

func resultJSON(res coordinator.Result) ResultJSON {
	out := ResultJSON{
		RunID: res.RunID, Status: res.Status, Reason: res.Reason, Note: res.Note, Task: res.Task,
		RecordID: res.RecordID, Preset: res.Preset, Model: res.Model, Simulated: res.Simulated, Usage: res.Usage,
		StartedAt: res.StartedAt, EndedAt: res.EndedAt,
		Fields: []FieldJSON{}, Sources: []SourceJSON{}, Conflicts: []coordinator.Conflict{},
		Evidence: []coordinator.Evidence{}, Steps: []StepJSON{},
	}
	if res.Conflicts != nil {
		out.Conflicts = res.Conflicts
	}
	if res.Evidence != nil {
		out.Evidence = res.Evidence
	}
	for _, s := range res.Steps {
		out.Steps = append(out.Steps, NewStepJSON(s))
	}
	cited := map[string]bool{}
	if a := res.Answer; a != nil {
		for l, v := range a.Fields {
			out.Fields = append(out.Fields, FieldJSON{Label: l, Value: v})
		}
		slices.SortFunc(out.Fields, func(x, y FieldJSON) int {
			ix, iy := rank(x.Label), rank(y.Label)
			if ix != iy {
				return ix - iy
			}
			if x.Label < y.Label {
				return -1
			}
			if x.Label > y.Label {
				return 1
			}
			return 0
		})
		for _, s := range a.Sources {
			cited[s] = true
		}
	}
	seen := map[string]int{}
	for _, ev := range res.Evidence {
		if i, ok := seen[ev.URL]; ok {
			if ev.RetrievedAt.Before(out.Sources[i].RetrievedAt) {
				out.Sources[i].RetrievedAt = ev.RetrievedAt
			}
			continue
		}
		seen[ev.URL] = len(out.Sources)
		out.Sources = append(out.Sources, SourceJSON{URL: ev.URL, RetrievedAt: ev.RetrievedAt, Cited: cited[ev.URL]})
	}
	return out
}

func rank(label string) int {
	if i := slices.Index(fieldOrder, label); i >= 0 {
		return i
	}
	return len(fieldOrder)
}

// PresetJSON is a preset as GET /api/presets lists it.
type PresetJSON struct {
	Name      string             `json:"name"`
	Title     string             `json:"title"`
	Task      string             `json:"task"`
	Expect    coordinator.Status `json:"expect"`
	Simulated bool               `json:"simulated"`
}

func presetsJSON() []PresetJSON {
	var out []PresetJSON
	for _, p := range presets.All() {
		out = append(out, PresetJSON{Name: p.Name, Title: p.Title, Task: p.Task, Expect: p.Expect, Simulated: p.Simulated})
	}
	return out
}

// presetNames are the presets' names, in the API's order.
func presetNames() []string {
	var out []string
	for _, p := range presets.All() {
		out = append(out, p.Name)
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: " + err.Error()) // every value marshalled here is one of this package's types
	}
	return b
}
