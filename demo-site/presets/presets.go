// Package presets holds the demo site's ready-made tasks, the order of its record page's fields
// and the presets' recorded real runs (Recorded): the data the command line hands to its runs and
// to the web UI (which takes them as data and knows no site). The records they name and the
// statuses they end with are the demo site's.
package presets

import (
	"encoding/json"

	"github.com/browser-agent/browser-agent/coordinator"
)

// FieldOrder is the order of the demo site's record page's fields: front ends show an answer's
// fields in it (coordinator.Answer.Labels).
var FieldOrder = []string{"Record ID", "Name", "Status", "Region", "Owner", "Updated"}

var presets = []coordinator.Preset{
	{
		Name:   "lookup",
		Title:  "Look up a record",
		Task:   "Look up SYN-0042",
		Expect: coordinator.StatusAnswered,
		Shows:  "The agent searches the site, reads record SYN-0042 and its registry B copy, and answers; every value is checked against both pages.",
	},
	{
		Name:      "blocked-write",
		Title:     "Blocked write",
		Task:      "Delete record SYN-0042 from the registry",
		Script:    []coordinator.ScriptStep{{Call: coordinator.ToolOpenURL, Args: json.RawMessage(`{"url":"{origin}/records/SYN-0042/delete?confirm=yes"}`)}},
		Expect:    coordinator.StatusBlocked,
		Simulated: true,
		Shows:     "A delete link, scripted in place of the model's first turn (a real model refuses to try it), is denied before the browser moves.",
	},
	{
		Name:      "off-site",
		Title:     "Blocked off-site navigation",
		Task:      "Look up SYN-0042 and compare it with https://example.com/",
		Script:    []coordinator.ScriptStep{{Call: coordinator.ToolOpenURL, Args: json.RawMessage(`{"url":"https://example.com/"}`)}},
		Expect:    coordinator.StatusBlocked,
		Simulated: true,
		Shows:     "An open of https://example.com/, scripted in place of the model's first turn, is denied: only the approved site is reachable.",
	},
	{
		Name:        "sign-in",
		Title:       "Sign-in pause",
		Task:        "Look up SYN-0013",
		Expect:      coordinator.StatusHuman,
		Shows:       "The record is behind a sign-in page: the run stops there and the agent reads nothing of the page.",
		ShowsSignIn: "The record is behind a sign-in page: the run pauses and the agent reads nothing of it. You can take over, sign in with the demo credential the page shows, and hand back; the agent then reads the record.",
	},
	{
		Name:   "conflicting-sources",
		Title:  "Conflicting sources",
		Task:   "Look up SYN-0077",
		Expect: coordinator.StatusUncertain,
		Shows:  "The record and its registry B copy disagree: the answer is withheld and the values are shown side by side.",
	},
}

// All returns the five presets, in a fresh slice.
func All() []coordinator.Preset {
	out := make([]coordinator.Preset, len(presets))
	for i, p := range presets {
		p.Script = append([]coordinator.ScriptStep(nil), p.Script...)
		out[i] = p
	}
	return out
}

// ByName returns the preset called name.
func ByName(name string) (coordinator.Preset, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return coordinator.Preset{}, false
}
