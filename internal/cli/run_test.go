package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// fakeRun replaces the browser with the HTTP fake and keeps the demo site each run starts. It
// returns the sites started and the fake browsers launched.
func fakeRun(t *testing.T) (*[]*demosite.Server, *[]*browsertest.HTTP) {
	t.Helper()
	var sites []*demosite.Server
	var browsers []*browsertest.HTTP
	oldLaunch, oldDemo := launchBrowser, startDemo
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		b := browsertest.NewHTTP(pol)
		browsers = append(browsers, b)
		return b, b, nil
	}
	startDemo = func(ctx context.Context) (*demosite.Server, error) {
		srv, err := oldDemo(ctx)
		if err == nil {
			sites = append(sites, srv)
		}
		return srv, err
	}
	t.Cleanup(func() { launchBrowser, startDemo = oldLaunch, oldDemo })
	t.Setenv("BROWSER_AGENT_DB", filepath.Join(t.TempDir(), "default-audit.db"))
	t.Setenv("OPENAI_API_KEY", "sk-test-not-a-key")
	return &sites, &browsers
}

// noLaunch fails the test if a browser is launched.
func noLaunch(t *testing.T) {
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		t.Error("a browser was launched")
		return nil, nil, fmt.Errorf("no browser in this test")
	}
}

// decodeRun decodes the --json output strictly.
func decodeRun(t *testing.T, out string) runJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var r runJSON
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("--json printed more than one object:\n%s", out)
	}
	return r
}

func TestRunPresets(t *testing.T) {
	sites, browsers := fakeRun(t)
	db := filepath.Join(t.TempDir(), "audit.db")
	wantCode := map[coordinator.Status]int{
		coordinator.StatusAnswered: ExitOK, coordinator.StatusUncertain: ExitUncertain,
		coordinator.StatusBlocked: ExitBlocked, coordinator.StatusHuman: ExitHuman,
	}
	for _, p := range presets.All() {
		t.Run(p.Name, func(t *testing.T) {
			transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
			code, out, errOut := runCLI(t, "run", "--preset", p.Name, "--json", "--db", db, "--transcript", transcript)
			if code != wantCode[p.Expect] {
				t.Fatalf("exit code: got %d, want %d\nstdout: %s\nstderr: %s", code, wantCode[p.Expect], out, errOut)
			}
			r := decodeRun(t, out)
			if r.Status != p.Expect || r.Simulated != p.Simulated || r.Preset != p.Name || r.Model != "offline" {
				t.Errorf("got status %s simulated %v preset %q model %q", r.Status, r.Simulated, r.Preset, r.Model)
			}
			site := (*sites)[len(*sites)-1].Site
			if n := site.Mutations(); n != 0 {
				t.Errorf("demo site mutations: got %d, want 0", n)
			}
			// One progress line per step, on stderr.
			for _, s := range r.Steps {
				if !strings.Contains(errOut, fmt.Sprintf("step %d: %s", s.N, s.Tool)) {
					t.Errorf("stderr lacks a line for step %d:\n%s", s.N, errOut)
				}
			}
			// The run and its steps are in the audit store.
			run, steps := auditOf(t, db, r.RunID)
			if run.Status != string(p.Expect) || run.StepCount != len(r.Steps) || len(steps) != len(r.Steps) || run.Simulated != p.Simulated || run.FinishedAt.IsZero() {
				t.Errorf("audit run: got %+v with %d steps; want status %s, %d steps", run, len(steps), p.Expect, len(r.Steps))
			}
			// The transcript starts with the system prompt and the task.
			b, err := os.ReadFile(transcript)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var first, second coordinator.Message
			json.Unmarshal([]byte(lines[0]), &first)
			json.Unmarshal([]byte(lines[1]), &second)
			if first.Role != coordinator.RoleSystem || second.Role != coordinator.RoleUser || !strings.Contains(second.Content, p.Task) {
				t.Errorf("transcript starts with %+v, %+v", first, second)
			}

			// Model turns and tokens, in --json and in the audit store alike.
			if run.ModelTurns != r.Usage.ModelTurns || run.PromptTokens != r.Usage.PromptTokens || run.CompletionTokens != r.Usage.CompletionTokens ||
				r.Usage.ModelTurns < 1 || (!p.Simulated && r.Usage.PromptTokens <= 0) {
				t.Errorf("usage: --json %+v, audit %d turns, %d/%d tokens", r.Usage, run.ModelTurns, run.PromptTokens, run.CompletionTokens)
			}
			if maxTurns := map[string]int{"lookup": 4, "conflicting-sources": 5}[p.Name]; maxTurns > 0 && r.Usage.ModelTurns > maxTurns {
				t.Errorf("model turns: got %d, want at most %d", r.Usage.ModelTurns, maxTurns)
			}

			switch p.Name {
			case "lookup":
				rec, _ := site.Record(demosite.LookupID)
				want := map[string]string{"Record ID": rec.ID, "Name": rec.Name, "Status": rec.Status, "Region": rec.Region, "Owner": rec.Owner, "Updated": rec.Updated}
				if r.Answer == nil || !maps.Equal(r.Answer.Fields, want) {
					t.Errorf("answer:\n\tgot  %+v\n\twant %v", r.Answer, want)
				}
				if len(r.Evidence) == 0 || r.Evidence[0].RetrievedAt.IsZero() || r.Evidence[0].URL == "" {
					t.Errorf("evidence: %+v", r.Evidence)
				}
			case "conflicting-sources":
				if r.Answer != nil || len(r.Conflicts) == 0 {
					t.Errorf("answer %+v conflicts %+v", r.Answer, r.Conflicts)
				}
			case "blocked-write", "off-site":
				b := (*browsers)[len(*browsers)-1]
				if len(b.Opened()) != 0 {
					t.Errorf("the browser was asked to open %v", b.Opened())
				}
				if len(r.Steps) != 1 || !r.Steps[0].Simulated || r.Steps[0].Verdict != policy.Deny {
					t.Errorf("steps: %+v", r.Steps)
				}
			}
		})
	}
}

func TestRunHumanSummary(t *testing.T) {
	sites, _ := fakeRun(t)
	code, out, errOut := runCLI(t, "run", "--task", "Look up SYN-0042", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code != ExitOK {
		t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	rec, _ := (*sites)[0].Site.Record("SYN-0042")
	for _, want := range []string{"answered: SYN-0042", "Status     " + rec.Status, "Owner      " + rec.Owner, "sources:", "/records/SYN-0042", "/sources/b/SYN-0042", "model offline"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"demo site at http://127.0.0.1:", "step 1: search_site http://127.0.0.1:", "/search?q=SYN-0042: allow (allowed read route)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// Progress never shows page text.
	if strings.Contains(errOut, rec.Name) || strings.Contains(errOut, rec.Notes) {
		t.Errorf("stderr shows page text:\n%s", errOut)
	}

	code, out, _ = runCLI(t, "run", "--preset", "blocked-write", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code != ExitBlocked || !strings.Contains(out, "blocked: open_url denied (policy): write word in url") || !strings.Contains(out, "simulated: ") {
		t.Errorf("blocked-write: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "run", "--preset", "conflicting-sources", "--db", filepath.Join(t.TempDir(), "a.db"))
	a, _ := (*sites)[len(*sites)-1].Site.Record(demosite.ConflictID)
	b, _ := (*sites)[len(*sites)-1].Site.SourceB(demosite.ConflictID)
	for _, want := range []string{"uncertain: sources conflict on ", fmt.Sprintf("%q from ", a.Status), fmt.Sprintf("%q from ", b.Status)} {
		if code != ExitUncertain || !strings.Contains(out, want) {
			t.Errorf("conflicting-sources: exit %d, stdout lacks %q:\n%s", code, want, out)
		}
	}
}

func TestRunRejected(t *testing.T) {
	sites, _ := fakeRun(t)
	noLaunch(t)
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badPolicy, []byte("version: 2\nsites: []\n"), 0o600)
	badScript := filepath.Join(dir, "bad.json")
	os.WriteFile(badScript, []byte(`{"steps": [{"call": "open_url", "final": {}}]}`), 0o600)
	network := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the model server was contacted: %s %s", r.Method, r.URL)
	}))
	defer network.Close()
	t.Setenv("OPENAI_BASE_URL", network.URL)

	tests := []struct {
		name   string
		args   []string
		reason string
	}{
		{"malformed record ID", []string{"--task", "Look up SYN-42"}, `task rejected: malformed record ID "SYN-42"`},
		{"two record IDs", []string{"--task", "Compare SYN-0042 with SYN-0043"}, "task rejected: more than one record ID (SYN-0042, SYN-0043); name exactly one"},
		{"unapproved model", []string{"--task", "Look up SYN-0042", "--model", "openai:gpt-9-unapproved"}, `model "gpt-9-unapproved" is not approved by the policy (approved: gpt-4.1-mini, gpt-4.1, gpt-4o-mini)`},
		{"bad policy", []string{"--task", "Look up SYN-0042", "--policy", badPolicy}, "policy: " + badPolicy + ":1: version: unsupported version 2"},
		{"bad script", []string{"--task", "Look up SYN-0042", "--model", "script:" + badScript}, "script " + badScript + `: step 1: give exactly one of "call", "final" or "text"`},
		{"missing script", []string{"--task", "Look up SYN-0042", "--model", "script:" + filepath.Join(dir, "none.json")}, "script " + filepath.Join(dir, "none.json") + ": open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "audit.db")
			before := len(*sites)
			code, out, errOut := runCLI(t, append([]string{"run", "--json", "--db", db}, tt.args...)...)
			if strings.HasPrefix(tt.reason, "task rejected") && len(*sites) != before {
				t.Error("a bad task started the demo site")
			}
			if code != ExitUsage {
				t.Fatalf("exit code: got %d, want %d\nstdout: %s\nstderr: %s", code, ExitUsage, out, errOut)
			}
			r := decodeRun(t, out)
			if r.Status != coordinator.StatusRejected || !strings.HasPrefix(r.Reason, tt.reason) {
				t.Errorf("got %s: %s\n\twant rejected: %s…", r.Status, r.Reason, tt.reason)
			}
			if len(r.Steps) != 0 {
				t.Errorf("steps: %+v", r.Steps)
			}
			store, err := audit.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if run, _, err := store.Run(t.Context(), r.RunID); err != nil || run.Status != string(coordinator.StatusRejected) {
				t.Errorf("audit: %+v, %v", run, err)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	fakeRun(t)
	noLaunch(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "give exactly one of --task or --preset"},
		{"both", []string{"--task", "Look up SYN-0042", "--preset", "lookup"}, "give exactly one of --task or --preset"},
		{"unknown preset", []string{"--preset", "delete-all"}, `unknown preset "delete-all"; presets: lookup, blocked-write, off-site, sign-in, conflicting-sources`},
		{"unknown model", []string{"--task", "Look up SYN-0042", "--model", "claude"}, `unknown --model "claude"; use offline, script:FILE or openai:NAME`},
		{"empty openai name", []string{"--task", "Look up SYN-0042", "--model", "openai:"}, `unknown --model "openai:"`},
		{"unquoted task", []string{"--task", "Look", "up"}, `unexpected argument "up"`},
		{"unknown flag", []string{"--task", "Look up SYN-0042", "--headless=false"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "audit.db")
			code, out, errOut := runCLI(t, append([]string{"run", "--db", db}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(errOut, tt.want) || out != "" {
				t.Errorf("got exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and %q", code, out, errOut, tt.want)
			}
			if _, err := os.Stat(db); err == nil {
				t.Error("a usage error created the audit database")
			}
		})
	}
}

// TestRunCredentialSecrets: secrets on a sign-in page appear nowhere: not on stdout or stderr,
// not in the transcript and not in the audit database.
func TestRunCredentialSecrets(t *testing.T) {
	fakeRun(t)
	secrets := []string{"hunter2-Secret!", "739201", "4111 1111 1111 1111"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/search":
			fmt.Fprint(w, `<!DOCTYPE html><title>Search</title><ol><li><a href="/records/SYN-0013">SYN-0013</a></li></ol>`)
		case "/records/SYN-0013":
			http.Redirect(w, r, "/login?next=/records/SYN-0013", http.StatusFound)
		case "/login":
			fmt.Fprintf(w, `<!DOCTYPE html><title>Sign in %[1]s</title><p>Code %[2]s, card %[3]s.</p>
<dl><dt>Record ID</dt><dd>SYN-0013</dd><dt>Password</dt><dd>%[1]s</dd></dl>
<form method="post"><input type="password" name="pw" value="%[1]s"><input autocomplete="one-time-code" name="code" value="%[2]s">
<input autocomplete="cc-number" name="cc" value="%[3]s"></form>`, secrets[0], secrets[1], secrets[2])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	os.WriteFile(polFile, demosite.PolicyYAML(srv.URL), 0o600)
	for _, asJSON := range []bool{true, false} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			dbDir := t.TempDir()
			transcript := filepath.Join(dir, fmt.Sprintf("t-%v.jsonl", asJSON))
			args := []string{"run", "--task", "Look up SYN-0013", "--policy", polFile, "--db", filepath.Join(dbDir, "audit.db"), "--transcript", transcript}
			if asJSON {
				args = append(args, "--json")
			}
			code, out, errOut := runCLI(t, args...)
			if code != ExitHuman {
				t.Fatalf("exit code: got %d, want %d\nstdout: %s\nstderr: %s", code, ExitHuman, out, errOut)
			}
			if asJSON {
				if r := decodeRun(t, out); r.Status != coordinator.StatusHuman {
					t.Errorf("status %s", r.Status)
				}
			} else if !strings.Contains(out, "human_action_required: sign-in required") {
				t.Errorf("stdout:\n%s", out)
			}
			tr, _ := os.ReadFile(transcript)
			if len(tr) == 0 {
				t.Error("empty transcript")
			}
			texts := map[string]string{"stdout": out, "stderr": errOut, "transcript": string(tr)}
			files, _ := os.ReadDir(dbDir)
			for _, f := range files {
				b, _ := os.ReadFile(filepath.Join(dbDir, f.Name()))
				texts["audit file "+f.Name()] = string(b)
			}
			for where, text := range texts {
				for _, s := range append(secrets, "4111111111111111") {
					if strings.Contains(text, s) {
						t.Errorf("%s contains the secret %q", where, s)
					}
				}
			}
		})
	}
}

func TestRunScriptModel(t *testing.T) {
	sites, browsers := fakeRun(t)
	dir := t.TempDir()
	// A compromised model: it tries a write, then claims a value it never extracted.
	file := filepath.Join(dir, "evil.json")
	os.WriteFile(file, []byte(`{"steps": [
		{"call": "open_url", "args": {"url": "http://127.0.0.1:1/records/SYN-0042/delete?confirm=yes"}},
		{"call": "click", "args": {"selector": "button"}},
		{"call": "search_site", "args": {"query": "SYN-0042"}},
		{"final": {"record_id": "SYN-0042", "fields": {"Status": "Closed"}, "sources": ["http://127.0.0.1:1/records/SYN-0042"]}}
	]}`), 0o600)
	code, out, errOut := runCLI(t, "run", "--task", "Look up SYN-0042", "--model", "script:"+file, "--json", "--db", filepath.Join(dir, "a.db"))
	if code != ExitBlocked {
		t.Fatalf("exit code: got %d, want %d\nstdout: %s\nstderr: %s", code, ExitBlocked, out, errOut)
	}
	r := decodeRun(t, out)
	if !r.Simulated || r.Model != "script:"+file || r.Answer != nil || !strings.HasPrefix(r.Reason, "unsupported answer: ") {
		t.Errorf("got %+v", r)
	}
	if got := (*sites)[0].Site.Mutations(); got != 0 {
		t.Errorf("mutations: %d", got)
	}
	for _, u := range (*browsers)[0].Opened() {
		if strings.Contains(u, "delete") || strings.Contains(u, ":1/") {
			t.Errorf("opened %s", u)
		}
	}
}

func TestRunLaunchFailure(t *testing.T) {
	fakeRun(t)
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return nil, nil, fmt.Errorf("chromium not found: run scripts/setup")
	}
	code, out, _ := runCLI(t, "run", "--preset", "lookup", "--json", "--db", filepath.Join(t.TempDir(), "a.db"))
	r := decodeRun(t, out)
	if code != ExitFailure || r.Status != coordinator.StatusError || r.Reason != "browser: chromium not found: run scripts/setup" {
		t.Errorf("exit %d, %s: %s", code, r.Status, r.Reason)
	}
}

func TestAuditCmd(t *testing.T) {
	fakeRun(t)
	db := filepath.Join(t.TempDir(), "audit.db")
	var ids []string
	for _, p := range []string{"lookup", "blocked-write"} {
		_, out, _ := runCLI(t, "run", "--preset", p, "--json", "--db", db)
		ids = append(ids, decodeRun(t, out).RunID)
	}

	code, out, errOut := runCLI(t, "audit", "--db", db)
	if code != ExitOK {
		t.Fatalf("audit: exit %d: %s", code, errOut)
	}
	for _, want := range append([]string{"RUN", "answered", "blocked", "lookup", "blocked-write"}, ids...) {
		if !strings.Contains(out, want) {
			t.Errorf("audit list lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runCLI(t, "audit", "--db", db, "--json")
	var list struct{ Runs []audit.Run }
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != ExitOK || len(list.Runs) != 2 || list.Runs[0].ID != ids[1] {
		t.Errorf("audit --json: exit %d, %v, %+v", code, err, list)
	}

	code, out, _ = runCLI(t, "audit", "--db", db, "--json", ids[0])
	var one struct {
		Run   audit.Run
		Steps []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &one); err != nil || code != ExitOK || one.Run.ID != ids[0] || len(one.Steps) != one.Run.StepCount || one.Run.StepCount == 0 {
		t.Errorf("audit RUN_ID --json: exit %d, %v, %+v", code, err, one)
	}
	if strings.Contains(out, "?q=") {
		t.Errorf("the audit store kept a query string:\n%s", out)
	}

	code, out, _ = runCLI(t, "audit", "--db", db, ids[1])
	for _, want := range []string{"run " + ids[1], "status    blocked", "simulated true", "open_url", "write word in url"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("audit RUN_ID lacks %q:\n%s", want, out)
		}
	}

	code, _, errOut = runCLI(t, "audit", "--db", db, "no-such-run")
	if code != ExitUsage || !strings.Contains(errOut, `run "no-such-run" not found`) {
		t.Errorf("unknown run: exit %d: %s", code, errOut)
	}

	missing := filepath.Join(t.TempDir(), "none.db")
	code, out, _ = runCLI(t, "audit", "--db", missing)
	if code != ExitOK || !strings.Contains(out, "no runs recorded") {
		t.Errorf("missing db: exit %d: %s", code, out)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("audit created a database")
	}
	if code, _, _ := runCLI(t, "audit", "--db", db, "a", "b"); code != ExitUsage {
		t.Errorf("two run IDs: exit %d", code)
	}
}

// TestRunTranscriptExact: the transcript file holds the messages exactly as the model got them.
func TestRunTranscriptExact(t *testing.T) {
	fakeRun(t)
	dir := t.TempDir()
	transcript := filepath.Join(dir, "t.jsonl")
	code, out, _ := runCLI(t, "run", "--preset", "lookup", "--json", "--db", filepath.Join(dir, "a.db"), "--transcript", transcript)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	r := decodeRun(t, out)
	b, _ := os.ReadFile(transcript)
	var msgs []coordinator.Message
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m coordinator.Message
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("transcript line %s: %v", line, err)
		}
		re, _ := json.Marshal(m)
		if !bytes.Equal(re, line) {
			t.Errorf("line is not a message as marshalled:\n\tgot  %s\n\twant %s", line, re)
		}
		msgs = append(msgs, m)
	}
	tools := 0
	for _, m := range msgs {
		if m.Role == coordinator.RoleTool {
			tools++
		}
	}
	// Every tool step's result was given to the model; the final answer closes the transcript.
	if tools != len(r.Steps)-1 || msgs[len(msgs)-1].Role != coordinator.RoleAssistant || msgs[len(msgs)-1].Content == "" {
		t.Errorf("%d tool messages for %d steps; last %+v", tools, len(r.Steps), msgs[len(msgs)-1])
	}
}

// TestRunInProcess holds cli.Run to "browser-agent run": the same task gives the same exit code,
// status, reason and steps either way; Run launches its browser with RunConfig.Launch, not
// launchBrowser; and it takes the OpenAI settings from RunConfig, not from the environment.
func TestRunInProcess(t *testing.T) {
	fakeRun(t) // OPENAI_API_KEY is set in the environment from here on
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--preset", "lookup", "--json", "--db", filepath.Join(dir, "cmd.db"))
	want := decodeRun(t, out)

	launched := 0
	noLaunch(t)
	var stdout, stderr bytes.Buffer
	got := Run(t.Context(), RunConfig{
		Preset: "lookup", Model: modelOffline, JSON: true, DB: filepath.Join(dir, "run.db"),
		Launch: func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			launched++
			b := browsertest.NewHTTP(pol)
			return b, b, nil
		},
		Stdout: &stdout, Stderr: &stderr,
	})
	r := decodeRun(t, stdout.String())
	if got != code || r.Status != want.Status || r.Reason != want.Reason || len(r.Steps) != len(want.Steps) || launched != 1 {
		t.Errorf("Run: exit %d, %s: %s, %d steps, %d launches\n\twant exit %d, %s: %s, %d steps, 1 launch (stderr %s / %s)",
			got, r.Status, r.Reason, len(r.Steps), launched, code, want.Status, want.Reason, len(want.Steps), stderr.String(), errOut)
	}

	stdout.Reset()
	got = Run(t.Context(), RunConfig{Task: "Look up SYN-0042", Model: "openai:gpt-4.1-mini", JSON: true,
		DB: filepath.Join(dir, "key.db"), Stdout: &stdout, Stderr: &stderr})
	r = decodeRun(t, stdout.String())
	if got != ExitUsage || !strings.Contains(r.Reason, "OPENAI_API_KEY is not set") {
		t.Errorf("an openai model without a key in RunConfig: exit %d, %s: %s; want the missing key named (the environment's is not the run's)", got, r.Status, r.Reason)
	}

	if got := Run(t.Context(), RunConfig{Task: "Look up SYN-0042", Preset: "lookup", Stdout: &stdout, Stderr: &stderr}); got != ExitUsage ||
		!strings.Contains(stderr.String(), "give exactly one of --task or --preset") {
		t.Errorf("task and preset: exit %d, stderr %q", got, stderr.String())
	}
}
