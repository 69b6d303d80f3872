package web

import (
	"encoding/json"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/runner"
)

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
func (s *Server) preset(name string) (coordinator.Preset, bool) {
	return runner.PresetNamed(s.offered, name)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: " + err.Error()) // every value marshalled here is one of this package's types
	}
	return b
}
