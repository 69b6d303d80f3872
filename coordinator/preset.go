package coordinator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// OriginPlaceholder in a preset's scripted arguments stands for the approved site's origin.
const OriginPlaceholder = "{origin}"

// Preset is a ready-made task, as a front end offers it: the command line (run --preset, record)
// and the web UI take their presets as data (the demo's are in demo-site/presets).
type Preset struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Task  string `json:"task"`
	// Script is the scripted turn substituted for the model's first turn in a simulated preset.
	// OriginPlaceholder in its arguments stands for the site's origin.
	Script []ScriptStep `json:"script,omitempty"`
	// Expect is the status the preset ends with on its site.
	Expect Status `json:"expect"`
	// Simulated presets substitute Script for the model's first turn and end blocked at the denial.
	Simulated bool `json:"simulated"`
	// Shows says what a run of the preset shows, for its card on the page. ShowsSignIn replaces
	// it where a person may take over at a sign-in page (a preset that Expects StatusHuman, on a
	// server whose policy names sign-in routes).
	Shows       string `json:"shows,omitempty"`
	ShowsSignIn string `json:"shows_sign_in,omitempty"`
}

// Model returns the model a run of the preset uses: model itself, or for a simulated preset model
// with the scripted turn substituted first (see Simulate), OriginPlaceholder replaced by origin.
func (p Preset) Model(model Model, origin string) Model {
	if len(p.Script) == 0 {
		return model
	}
	o, _ := json.Marshal(origin)
	o = o[1 : len(o)-1] // the origin as JSON string content
	steps := make([]ScriptStep, len(p.Script))
	for i, st := range p.Script {
		st.Args = bytes.ReplaceAll(st.Args, []byte(OriginPlaceholder), o)
		steps[i] = st
	}
	return Simulate(model, steps)
}

// Labels returns the answer's field labels: those in order first, in its order, then the rest
// alphabetically. Front ends show the fields so (the demo's order is presets.FieldOrder).
func (a *Answer) Labels(order []string) []string {
	labels := make([]string, 0, len(a.Fields))
	for l := range a.Fields {
		labels = append(labels, l)
	}
	rank := func(l string) int {
		if i := slices.Index(order, l); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(labels, func(x, y string) int {
		if c := cmp.Compare(rank(x), rank(y)); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	return labels
}
