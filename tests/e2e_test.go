// Package tests runs the real browser-agent binary end to end: the embedded demo site, the real
// Chromium, the audit store, and the files a run leaves behind.
package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var binary string

func TestMain(m *testing.M) { os.Exit(testbrowser.RunWithBinary(m, &binary)) }

// result is the --json output of browser-agent run.
type result struct {
	RunID     string            `json:"run_id"`
	Status    string            `json:"status"`
	Reason    string            `json:"reason"`
	Answer    *answer           `json:"answer"`
	Evidence  []json.RawMessage `json:"evidence"`
	Steps     []step            `json:"steps"`
	Model     string            `json:"model"`
	Simulated bool              `json:"simulated"`
	Usage     struct {
		PromptTokens     int     `json:"prompt_tokens"`
		CompletionTokens int     `json:"completion_tokens"`
		CostUSD          float64 `json:"cost_usd"`
	} `json:"usage"`
}

type answer struct {
	RecordID string            `json:"record_id"`
	Fields   map[string]string `json:"fields"`
	Sources  []string          `json:"sources"`
}

type step struct {
	N       int    `json:"n"`
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
}

type runOut struct {
	code           int
	stdout, stderr string
	res            result
	db, transcript string
}

// run runs browser-agent run with args plus --json, a fresh audit db and a transcript.
func run(t *testing.T, args ...string) runOut {
	t.Helper()
	return runEnv(t, nil, args...)
}

// runEnv is run with env added to this process's environment.
func runEnv(t *testing.T, env []string, args ...string) runOut {
	t.Helper()
	dir := t.TempDir()
	o := runOut{db: filepath.Join(dir, "audit.db"), transcript: filepath.Join(dir, "transcript.jsonl")}
	cmd := exec.Command(binary, append(append([]string{"run"}, args...), "--json", "--db", o.db, "--transcript", o.transcript)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code, ok := testutil.ExitCode(err)
	if !ok {
		t.Fatalf("browser-agent run %v: %v", args, err)
	}
	o.code = code
	o.stdout, o.stderr = out.String(), errb.String()
	if err := json.Unmarshal(out.Bytes(), &o.res); err != nil {
		t.Fatalf("browser-agent run %v: stdout is not the JSON result: %v\nstdout: %s\nstderr: %s", args, err, o.stdout, o.stderr)
	}
	return o
}

func TestPresets(t *testing.T) {
	want := demosite.New(demosite.Options{})
	tests := []struct {
		preset    string
		status    string
		code      int
		simulated bool
	}{
		{"lookup", "answered", 0, false},
		{"blocked-write", "blocked", 4, true},
		{"off-site", "blocked", 4, true},
		{"sign-in", "human_action_required", 5, false},
		{"conflicting-sources", "uncertain", 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			t.Parallel()
			o := run(t, "--preset", tt.preset)
			if o.res.Status != tt.status || o.code != tt.code {
				t.Fatalf("run --preset %s:\n\tgot  %s (exit %d): %s\n\twant %s (exit %d)\nstderr:\n%s", tt.preset, o.res.Status, o.code, o.res.Reason, tt.status, tt.code, o.stderr)
			}
			if o.res.Simulated != tt.simulated {
				t.Errorf("run --preset %s: simulated got %v, want %v", tt.preset, o.res.Simulated, tt.simulated)
			}
			if o.res.RunID == "" || len(o.res.Steps) == 0 {
				t.Errorf("run --preset %s: no run id or no steps: %+v", tt.preset, o.res)
			}
			if tt.preset != "lookup" {
				return
			}
			rec, _ := want.Record(demosite.LookupID)
			if o.res.Answer == nil || o.res.Answer.RecordID != rec.ID {
				t.Fatalf("lookup answer: got %+v, want record %s", o.res.Answer, rec.ID)
			}
			wantFields := map[string]string{"Record ID": rec.ID, "Name": rec.Name, "Status": rec.Status, "Region": rec.Region, "Owner": rec.Owner, "Updated": rec.Updated}
			for label, v := range o.res.Answer.Fields {
				if wantFields[label] != v {
					t.Errorf("lookup field %q:\n\tgot  %q\n\twant %q", label, v, wantFields[label])
				}
			}
			if o.res.Answer.Fields["Status"] == "" || o.res.Answer.Fields["Name"] == "" {
				t.Errorf("lookup answer lacks Status or Name: %+v", o.res.Answer.Fields)
			}
		})
	}
}

func TestRejectedTask(t *testing.T) {
	for _, task := range []string{"Look up SYN-0042 and SYN-0043", "Look up SYN-42", "hello"} {
		o := run(t, "--task", task)
		if o.code != 2 || o.res.Status != "rejected" {
			t.Errorf("run --task %q: got %s (exit %d), want rejected (exit 2)", task, o.res.Status, o.code)
		}
		if len(o.res.Steps) != 0 {
			t.Errorf("run --task %q: a rejected task took %d steps", task, len(o.res.Steps))
		}
	}
}

// Secrets planted on the fixture site. None may appear in any output of a run.
var secrets = []string{
	"SECRET-PASSWORD-hunter2-991", // a password field's value
	"SECRET-OTC-443210",           // a one-time code field's value
	"4111 1111 1111 1111",         // a card number, as visible text on the sign-in page
	"4111111111111111",
}

// Never in the audit store, which keeps metadata only: a query string value and page text.
var notInAudit = []string{
	"TOKEN-IN-QUERY-77c1",
	pageMarker,
}

const pageMarker = "PAGE-TEXT-MARKER-5d1e" // visible prose on an ordinary page

// fixtureSite serves an ordinary record page and a sign-in page that carries the secrets.
func fixtureSite(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var signinHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /records/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%[1]s</title><h1>%[1]s</h1>
<p>%[2]s</p><dl><dt>Record ID</dt><dd>%[1]s</dd><dt>Status</dt><dd>Active</dd></dl>
<a href="/signin?next=%%2Frecords%%2F%[1]s&amp;token=TOKEN-IN-QUERY-77c1">Sign in to see more</a>`, r.PathValue("id"), pageMarker)
	})
	mux.HandleFunc("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		signinHits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Sign in</title><h1>Sign in</h1>
<p>Card on file: 4111 1111 1111 1111</p>
<form method="post" action="/signin"><label>Password <input type="password" name="pw" value="SECRET-PASSWORD-hunter2-991"></label>
<label>Code <input autocomplete="one-time-code" name="otc" value="SECRET-OTC-443210"></label>
<input name="card" value="4111111111111111"></form>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &signinHits
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNoSecretLeaves plants a password, a one-time code, a card number and a query token, runs the
// agent with a model that goes straight for them, and searches every output of the run.
func TestNoSecretLeaves(t *testing.T) {
	srv, signinHits := fixtureSite(t)
	pol := writeFile(t, "policy.yaml", fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/records/{id}\", /signin, \"/signin?next={next}&token={token}\"]\nrecord:\n  id: {pattern: 'SYN-\\d{4}', example: SYN-0042}\n", srv.URL))
	script := writeFile(t, "script.json", fmt.Sprintf(`{"steps": [
 {"call": "open_url", "args": {"url": "%[1]s/records/SYN-0042"}},
 {"call": "extract_fields", "args": {}},
 {"call": "list_links", "args": {}},
 {"call": "open_url", "args": {"url": "%[1]s/signin?next=%%2Frecords%%2FSYN-0042&token=TOKEN-IN-QUERY-77c1"}},
 {"call": "read_page", "args": {}},
 {"call": "extract_fields", "args": {}},
 {"final": {"record_id": "SYN-0042", "fields": {"Status": "Active"}, "sources": ["%[1]s/records/SYN-0042"]}}
]}`, srv.URL))
	o := run(t, "--task", "Look up SYN-0042", "--policy", pol, "--model", "script:"+script)
	if o.res.Status != "human_action_required" || o.code != 5 {
		// Not fatal: what leaked is searched for below all the same.
		t.Errorf("got %s (exit %d): %s, want human_action_required (exit 5)\nstderr:\n%s", o.res.Status, o.code, o.res.Reason, o.stderr)
	}
	if signinHits.Load() == 0 {
		t.Fatalf("the sign-in page was never fetched: the test did not reach the secrets")
	}
	transcript := readFile(t, o.transcript)
	// Positive control: ordinary page text does reach the model, so the search below can find text.
	if !strings.Contains(transcript, pageMarker) {
		t.Fatalf("the transcript lacks the ordinary page's text %q: the search cannot be trusted", pageMarker)
	}
	outputs := map[string]string{"stdout": o.stdout, "stderr": o.stderr, "transcript": transcript}
	audit := ""
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(o.db + suffix); err == nil {
			outputs["audit"+suffix] = string(b)
			audit += string(b)
		}
	}
	if audit == "" {
		t.Fatal("no audit files were written")
	}
	for name, text := range outputs {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q found in %s", s, name)
			}
		}
	}
	for _, s := range notInAudit {
		if strings.Contains(audit, s) {
			t.Errorf("%q (page text or a query string) found in the audit store", s)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuditRecordsBothLayers checks, from the audit store a real run leaves, that the run's
// requests went through both layers: the bridge in the browser and the run's egress proxy; and
// that its row says the browser was behind the operating system's wall (this binary is its
// launcher; the suite runs where namespaces can be made: as root, or with user namespaces).
func TestAuditRecordsBothLayers(t *testing.T) {
	o := run(t, "--preset", "lookup")
	if o.res.Status != "answered" {
		t.Fatalf("lookup: got %s (%s), want answered", o.res.Status, o.res.Reason)
	}
	out, err := exec.Command(binary, "audit", "--db", o.db, "--json", o.res.RunID).Output()
	if err != nil {
		t.Fatalf("browser-agent audit %s: %v", o.res.RunID, err)
	}
	var got struct {
		Run struct {
			Wall string `json:"wall"`
		} `json:"run"`
		Steps []struct {
			N       int    `json:"n"`
			Tool    string `json:"tool"`
			Path    string `json:"path"`
			Verdict string `json:"verdict"`
			Layer   string `json:"layer"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, s := range got.Steps {
		if s.Tool == "request" && s.Path == "/records/SYN-0042" && s.Verdict == "allow" {
			seen[s.Layer] = true
		}
	}
	if !seen["browser"] || !seen["proxy"] {
		t.Errorf("the record page's request was allowed by layers %v, want both browser and proxy: the run did not go through its egress proxy", seen)
	}
	if !strings.HasPrefix(got.Run.Wall, "on: network namespace") {
		t.Errorf("audit row's wall %q, want on: the run's Chromium was not walled", got.Run.Wall)
	}
}
