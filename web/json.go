package web

import (
	"encoding/json"
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

// resultJSON is res as the API shows it, the answer's fields in order (coordinator.Answer.Labels).
func resultJSON(res coordinator.Result, order []string) ResultJSON {
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

// PresetJSON is a preset as GET /api/presets lists it.
type PresetJSON struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Task  string `json:"task"`
	// Shows says what a run of the preset shows, for its card on the page.
	Shows string `json:"shows"`
	// Expect is the status the run ends with when nobody acts on it.
	Expect coordinator.Status `json:"expect"`
	// ExpectSignedIn is the status it ends with when the visitor takes over at the sign-in page,
	// signs in and hands back: set for a preset that stops at a sign-in page on a server whose
	// policy names a sign-in route (the takeover is offered), "" otherwise.
	ExpectSignedIn coordinator.Status `json:"expect_signed_in,omitempty"`
	Simulated      bool               `json:"simulated"`
}

// presetsJSON lists the presets as this server runs them: a preset that stops at a sign-in page
// ends answered once the visitor signs in, when the policy offers the takeover.
func (s *Server) presetsJSON() []PresetJSON {
	takeover := false
	for _, site := range s.pol.Sites() {
		takeover = takeover || len(site.SignIn) > 0
	}
	out := []PresetJSON{} // [] when the server offers none
	for _, p := range s.offered {
		pj := PresetJSON{Name: p.Name, Title: p.Title, Task: p.Task, Shows: p.Shows, Expect: p.Expect, Simulated: p.Simulated}
		if takeover && p.Expect == coordinator.StatusHuman {
			pj.ExpectSignedIn = coordinator.StatusAnswered
			if p.ShowsSignIn != "" {
				pj.Shows = p.ShowsSignIn
			}
		}
		out = append(out, pj)
	}
	return out
}

// presetNames are the presets' names, in the API's order.
func (s *Server) presetNames() []string {
	var out []string
	for _, p := range s.offered {
		out = append(out, p.Name)
	}
	return out
}

// preset is the server's preset called name.
func (s *Server) preset(name string) (coordinator.Preset, bool) { return presetNamed(s.offered, name) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: " + err.Error()) // every value marshalled here is one of this package's types
	}
	return b
}
