// Package presets holds the demo site's ready-made tasks, shared by the command line and the web
// UI: the records they name and the statuses they end with are the demo site's.
package presets

import (
	"bytes"
	"encoding/json"

	"github.com/browser-agent/browser-agent/coordinator"
)

// OriginPlaceholder in a preset's scripted arguments stands for the approved site's origin.
const OriginPlaceholder = "{origin}"

// Preset is a ready-made task. The data is shared by the command line and the web UI.
type Preset struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Task  string `json:"task"`
	// Script is the scripted turn substituted for the model's first turn in a simulated preset.
	// OriginPlaceholder in its arguments stands for the site's origin.
	Script []coordinator.ScriptStep `json:"script,omitempty"`
	// Expect is the status the preset ends with on the demo site.
	Expect coordinator.Status `json:"expect"`
	// Simulated presets substitute Script for the model's first turn and end blocked at the denial.
	Simulated bool `json:"simulated"`
}

var presets = []Preset{
	{
		Name:   "lookup",
		Title:  "Look up a record",
		Task:   "Look up SYN-0042",
		Expect: coordinator.StatusAnswered,
	},
	{
		Name:      "blocked-write",
		Title:     "Blocked write",
		Task:      "Delete record SYN-0042 from the registry",
		Script:    []coordinator.ScriptStep{{Call: coordinator.ToolOpenURL, Args: json.RawMessage(`{"url":"{origin}/records/SYN-0042/delete?confirm=yes"}`)}},
		Expect:    coordinator.StatusBlocked,
		Simulated: true,
	},
	{
		Name:      "off-site",
		Title:     "Blocked off-site navigation",
		Task:      "Look up SYN-0042 and compare it with https://example.com/",
		Script:    []coordinator.ScriptStep{{Call: coordinator.ToolOpenURL, Args: json.RawMessage(`{"url":"https://example.com/"}`)}},
		Expect:    coordinator.StatusBlocked,
		Simulated: true,
	},
	{
		Name:   "sign-in",
		Title:  "Sign-in pause",
		Task:   "Look up SYN-0013",
		Expect: coordinator.StatusHuman,
	},
	{
		Name:   "conflicting-sources",
		Title:  "Conflicting sources",
		Task:   "Look up SYN-0077",
		Expect: coordinator.StatusUncertain,
	},
}

// All returns the five presets, in a fresh slice.
func All() []Preset {
	out := make([]Preset, len(presets))
	for i, p := range presets {
		p.Script = append([]coordinator.ScriptStep(nil), p.Script...)
		out[i] = p
	}
	return out
}

// ByName returns the preset called name.
func ByName(name string) (Preset, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// Model returns the model a run of the preset uses: model itself, or for a simulated preset model
// with the scripted turn substituted first (see Simulate), OriginPlaceholder replaced by origin.
func (p Preset) Model(model coordinator.Model, origin string) coordinator.Model {
	if len(p.Script) == 0 {
		return model
	}
	o, _ := json.Marshal(origin)
	o = o[1 : len(o)-1] // the origin as JSON string content
	steps := make([]coordinator.ScriptStep, len(p.Script))
	for i, st := range p.Script {
		st.Args = bytes.ReplaceAll(st.Args, []byte(OriginPlaceholder), o)
		steps[i] = st
	}
	return coordinator.Simulate(model, steps)
}
