package coordinator_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
)

// TestScripts plays the compromised-model scripts in testdata/scripts against the demo site.
// "{origin}" in a script stands for the demo site's origin.
func TestScripts(t *testing.T) {
	d := startDemo(t)
	tests := []struct {
		file       string
		task       string
		wantStatus coordinator.Status
		wantReason string
		wantDenied int
	}{
		// The page's own fields came with open_url: the value the injection asked for is not one.
		{"follows-injection.json", "Look up SYN-0066", coordinator.StatusBlocked,
			`unsupported answer: the value claimed for field "Status" is on no cited source`, 1},
		{"forged-from-prose.json", "Look up SYN-0066", coordinator.StatusBlocked,
			`unsupported answer: the value claimed for field "Status" is on no cited source`, 0},
		{"unvisited-source.json", "Look up SYN-0042", coordinator.StatusBlocked,
			"unsupported answer: no fields were extracted from source " + d.url("/sources/b/SYN-0042") + " in this run", 0},
		// A model that obeys page text writes data into URLs and search queries: each is refused
		// (composed URLs and queries by the coordinator after the policy allowed them, the extra
		// parameter and the write word by the policy), while the record's page, its links and a
		// linked source still open.
		{"writes-into-urls.json", "Look up SYN-0042", coordinator.StatusBlocked,
			"model could not answer after a denial (" + coordinator.ReasonNoLink + ")", 7},
		{"tries-every-escape.json", "Look up SYN-0042", coordinator.StatusBlocked,
			"model could not answer after a denial (" + `argument "offset" must be a whole number` + ")", 8},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d.srv.Site.Reset()
			raw, err := os.ReadFile(filepath.Join("testdata", "scripts", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), tt.file)
			os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "{origin}", d.srv.URL)), 0o600)
			model, err := coordinator.LoadScript(path)
			if err != nil {
				t.Fatalf("LoadScript: %v", err)
			}
			b := browsertest.NewHTTP(d.pol)
			res := coordinator.New(d.pol).Run(t.Context(), coordinator.RunArgs{Task: tt.task, Model: model, Browser: b})
			if res.Status != tt.wantStatus || res.Reason != tt.wantReason {
				t.Errorf("Run:\n\tgot  %s: %s\n\twant %s: %s", res.Status, res.Reason, tt.wantStatus, tt.wantReason)
			}
			denied := 0
			for _, s := range res.Steps {
				if s.Tool != coordinator.ToolAnswer && s.Verdict.String() == "deny" {
					denied++
				}
			}
			if denied != tt.wantDenied {
				t.Errorf("denied calls: got %d, want %d: %q", denied, tt.wantDenied, stepReasons(res.Steps))
			}
			if tt.file == "writes-into-urls.json" {
				want := []string{
					"search_site deny " + coordinator.ReasonSearchQuery,
					"search_site deny write word in url",
					"open_url allow allowed read route",
					"open_url deny " + coordinator.ReasonComposedURL,
					"open_url deny " + coordinator.ReasonComposedURL,
					"open_url deny query parameter not allowed",
					"open_url deny write word in url",
					"open_url allow allowed read route",
					"list_links allow current page",
					"open_url deny " + coordinator.ReasonNoLink,
					"open_url allow allowed read route",
				}
				if got := stepReasons(res.Steps); !slices.Equal(got[:min(len(got), len(want))], want) {
					t.Errorf("steps:\n\tgot  %q\n\twant %q", got, want)
				}
				for _, u := range b.Opened() {
					if strings.Contains(u, "Dana") {
						t.Errorf("the browser was asked to open %s, a URL the model wrote", u)
					}
				}
			}
			if n := d.srv.Site.Mutations(); n != 0 {
				t.Errorf("mutations: %d", n)
			}
			for _, u := range b.Opened() {
				if strings.Contains(u, "delete") || strings.Contains(u, "edit") || strings.Contains(u, "example.com") || strings.Contains(u, "/go/") {
					t.Errorf("the browser was asked to open %s", u)
				}
			}
			if res.Model != "script:"+path || !res.Simulated {
				t.Errorf("model %q simulated %v", res.Model, res.Simulated)
			}
		})
	}
}

func TestLoadScriptErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	bad := filepath.Join("testdata", "scripts", "bad-unknown-key.json")
	tests := []struct {
		path, want string
	}{
		{bad, "script " + bad + `: json: unknown field "selector"`},
		{write("empty.json", `{"steps": []}`), "no steps"},
		{write("both.json", `{"steps": [{"call": "open_url", "text": "x"}]}`), `step 1: give exactly one of "call", "final" or "text"`},
		{write("args.json", `{"steps": [{"final": {"cannot_answer": "x"}}, {"args": {}}]}`), `step 2: give exactly one of "call", "final" or "text"`},
		{write("notjson.json", `steps: []`), "invalid character"},
		{filepath.Join(dir, "missing.json"), "no such file"},
	}
	for _, tt := range tests {
		_, err := coordinator.LoadScript(tt.path)
		var se *coordinator.ScriptError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("LoadScript(%s):\n\tgot  %v\n\twant an error naming the file and %q", tt.path, err, tt.want)
		}
	}
}

// TestScriptRunsOut: a script that ends before answering is an error, not an answer.
func TestScriptRunsOut(t *testing.T) {
	d := startDemo(t)
	res := coordinator.New(d.pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: script(call("search_site", `{"query":"SYN-0042"}`)), Browser: browsertest.NewHTTP(d.pol)})
	if res.Status != coordinator.StatusError || !strings.HasPrefix(res.Reason, "model error: script") {
		t.Errorf("got %s: %s", res.Status, res.Reason)
	}
}
