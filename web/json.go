package web

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
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

// fieldOrder is the demo site's field order; other labels follow alphabetically.
var fieldOrder = []string{"Record ID", "Name", "Status", "Region", "Owner", "Updated"}

func resultJSON(res coordinator.Result) ResultJSON {
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

// presetShows is what each preset's run shows, as its card says; the sign-in preset's text
// depends on whether the takeover is offered (presetShowsSignIn).
var presetShows = map[string]string{
	"lookup":              "The agent searches the site, reads record SYN-0042 and its registry B copy, and answers; every value is checked against both pages.",
	"blocked-write":       "A delete link, scripted in place of the model's first turn (a real model refuses to try it), is denied before the browser moves.",
	"off-site":            "An open of https://example.com/, scripted in place of the model's first turn, is denied: only the approved site is reachable.",
	"sign-in":             "The record is behind a sign-in page: the run stops there and the agent reads nothing of the page.",
	"conflicting-sources": "The record and its registry B copy disagree: the answer is withheld and the values are shown side by side.",
}

const presetShowsSignIn = "The record is behind a sign-in page: the run pauses and the agent reads nothing of it. You can take over, sign in with the demo credential the page shows, and hand back; the agent then reads the record."

// presetsJSON lists the presets as this server runs them: a preset that stops at a sign-in page
// ends answered once the visitor signs in, when the policy offers the takeover.
func (s *Server) presetsJSON() []PresetJSON {
	takeover := false
	for _, site := range s.pol.Sites() {
		takeover = takeover || len(site.SignIn) > 0
	}
	var out []PresetJSON
	for _, p := range presets.All() {
		pj := PresetJSON{Name: p.Name, Title: p.Title, Task: p.Task, Shows: presetShows[p.Name], Expect: p.Expect, Simulated: p.Simulated}
		if takeover && p.Expect == coordinator.StatusHuman {
			pj.Shows, pj.ExpectSignedIn = presetShowsSignIn, coordinator.StatusAnswered
		}
		out = append(out, pj)
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
