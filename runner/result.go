package runner

import (
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
)

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
	Steps     []coordinator.Step     `json:"steps"`
	Simulated bool                   `json:"simulated"`
	Usage     coordinator.Usage      `json:"usage"`
	StartedAt time.Time              `json:"started_at"`
	EndedAt   time.Time              `json:"ended_at"`
}

// ResultOf is res as the API shows it, the answer's fields in order (coordinator.Answer.Labels).
func ResultOf(res coordinator.Result, order []string) ResultJSON {
	out := ResultJSON{
		RunID: res.RunID, Status: res.Status, Reason: res.Reason, Note: res.Note, Task: res.Task,
		RecordID: res.RecordID, Preset: res.Preset, Model: res.Model, Simulated: res.Simulated, Usage: res.Usage,
		StartedAt: res.StartedAt, EndedAt: res.EndedAt,
		Fields: []FieldJSON{}, Sources: []SourceJSON{}, Conflicts: []coordinator.Conflict{},
		Evidence: []coordinator.Evidence{}, Steps: []coordinator.Step{},
	}
	if res.Conflicts != nil {
		out.Conflicts = res.Conflicts
	}
	if res.Evidence != nil {
		out.Evidence = res.Evidence
	}
	if res.Steps != nil {
		out.Steps = res.Steps
	}
	cited := map[string]bool{}
	if a := res.Answer; a != nil {
		for _, l := range a.Labels(order) {
			out.Fields = append(out.Fields, FieldJSON{Label: l, Value: a.Fields[l]})
		}
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
