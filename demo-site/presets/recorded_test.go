package presets_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/runner"
)

// TestRecorded: every preset has one recorded run, valid (runner.LoadRecordings), ending as the
// preset expects, driven by Chromium, its frames PNG.
func TestRecorded(t *testing.T) {
	recs, err := runner.LoadRecordings(presets.Recorded())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]runner.Recording{}
	for _, r := range recs {
		got[r.Preset] = r
	}
	for _, p := range presets.All() {
		r, ok := got[p.Name]
		if !ok {
			t.Errorf("no recorded run of preset %s", p.Name)
			continue
		}
		if r.Result.Status != p.Expect || r.Result.Simulated != p.Simulated {
			t.Errorf("recorded %s: got %s simulated=%v, want %s simulated=%v", p.Name, r.Result.Status, r.Result.Simulated, p.Expect, p.Simulated)
		}
		if !strings.HasPrefix(r.Browser, "Chromium ") {
			t.Errorf("recorded %s was not driven by Chromium but %q: re-record with the real bridge", p.Name, r.Browser)
		}
		for _, m := range r.Timeline {
			if m.Frame != nil && !bytes.HasPrefix(m.Frame, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("recorded %s: a frame is not a PNG", p.Name)
			}
		}
	}
}
