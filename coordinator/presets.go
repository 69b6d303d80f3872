package coordinator

import (
	"bytes"
	"encoding/json"
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
	Script []ScriptStep `json:"script,omitempty"`
	// Expect is the status the preset ends with on the demo site.
	Expect Status `json:"expect"`
	// Simulated presets substitute Script for the model's first turn and end blocked at the denial.
	Simulated bool `json:"simulated"`
}

var presets = []Preset{
	{
		Name:   "lookup",
		Title:  "Look up a record",
		Task:   "Look up SYN-0042",
		Expect: StatusAnswered,
	},
	{
		Name:      "blocked-write",
		Title:     "Blocked write",
		Task:      "Delete record SYN-0042 from the registry",
		Script:    []ScriptStep{{Call: ToolOpenURL, Args: json.RawMessage(`{"url":"{origin}/records/SYN-0042/delete?confirm=yes"}`)}},
		Expect:    StatusBlocked,
		Simulated: true,
	},
	{
		Name:      "off-site",
		Title:     "Blocked off-site navigation",
		Task:      "Look up SYN-0042 and compare it with https://example.com/",
		Script:    []ScriptStep{{Call: ToolOpenURL, Args: json.RawMessage(`{"url":"https://example.com/"}`)}},
		Expect:    StatusBlocked,
		Simulated: true,
	},
	{
		Name:   "sign-in",
		Title:  "Sign-in pause",
		Task:   "Look up SYN-0013",
		Expect: StatusHuman,
	},
	{
		Name:   "conflicting-sources",
		Title:  "Conflicting sources",
		Task:   "Look up SYN-0077",
		Expect: StatusUncertain,
	},
}

// Presets returns the five presets, in a fresh slice.
func Presets() []Preset {
	out := make([]Preset, len(presets))
	for i, p := range presets {
		p.Script = append([]ScriptStep(nil), p.Script...)
		out[i] = p
	}
	return out
}

// PresetByName returns the preset called name.
func PresetByName(name string) (Preset, bool) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
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
