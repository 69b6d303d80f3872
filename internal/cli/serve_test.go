package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
	"github.com/browser-agent/browser-agent/web"
)

// fakeBrowser makes every run drive the HTTP fake browser instead of Chromium.
func fakeBrowser(t *testing.T) {
	t.Helper()
	old := launchBrowser
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		b := browsertest.NewHTTP(pol)
		return b, b, nil
	}
	oldWarm := serveWarm
	serveWarm = false
	t.Cleanup(func() { launchBrowser, serveWarm = old, oldWarm })
	t.Setenv("BROWSER_AGENT_DB", filepath.Join(t.TempDir(), "default-audit.db"))
}

func TestServeUsage(t *testing.T) {
	fakeBrowser(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad trusted proxy", []string{"--trusted-proxy", "10.0.0.0/33"}, "--trusted-proxy"},
		{"trusted proxy not an address", []string{"--trusted-proxy", "proxy.example"}, "not an address or CIDR"},
		{"origin with a path", []string{"--allow-origin", "chrome-extension://abc/sidepanel.html"}, "give an origin"},
		{"origin with a trailing slash", []string{"--allow-origin", "https://example.com/"}, "trailing slash"},
		{"no runs per hour", []string{"--runs-per-hour", "0"}, "--runs-per-hour"},
		{"negative spend", []string{"--daily-spend", "-1"}, "--daily-spend must be an amount in USD, 0 or more"},
		{"negative queue", []string{"--queue", "-1"}, "--queue"},
		{"unknown model", []string{"--model", "gpt"}, "unknown --model"},
		{"unapproved model", []string{"--model", "openai:not-approved", "--db", filepath.Join(t.TempDir(), "a.db")}, "not-approved"},
		{"extra argument", []string{"now"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("serve %v:\n\tgot  exit %d, %q\n\twant exit %d, containing %q", tt.args, code, stderr, ExitUsage, tt.want)
			}
		})
	}
}

func TestServe(t *testing.T) {
	fakeBrowser(t)
	t.Setenv("OPENAI_API_KEY", "sk-test-serve-secret")
	db := filepath.Join(t.TempDir(), "audit.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	oldCtx, oldListen := serveContext, serveListening
	serveContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	serveListening = func(a string) { addrc <- a }
	t.Cleanup(func() { serveContext, serveListening = oldCtx, oldListen })

	var stdout, stderr testutil.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--allow-origin", "chrome-extension://abcdefghijklmnopabcdefghijklmnop"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case code := <-done:
		t.Fatalf("serve exited %d before listening:\n%s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen:\n%s", stderr.String())
	}

	get := func(path string) []byte {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return b
	}
	var h web.HealthJSON
	json.Unmarshal(get("/api/health"), &h)
	if !h.Live || h.Limits.PerVisitor != 5 || h.Limits.DailySpendUSD != 3 || h.Limits.Concurrent != 1 {
		t.Errorf("health: got %+v, want live with the product's limits", h)
	}
	if page := get("/"); !bytes.Contains(page, []byte(`<script type="module" src="/static/app.js">`)) {
		t.Errorf("GET / is not the page")
	}

	_, events := testutil.StartLiveRun(t, base, `{"preset":"lookup"}`)
	res, err := http.Get(base + events)
	if err != nil {
		t.Fatal(err)
	}
	var result runner.ResultJSON
	var all strings.Builder
	for _, ev := range testutil.ReadEvents(io.TeeReader(res.Body, &all)) {
		if ev.Name == web.EventResult {
			json.Unmarshal([]byte(ev.Data), &result)
		}
	}
	res.Body.Close()
	if result.Status != coordinator.StatusAnswered || result.RunID == "" {
		t.Fatalf("lookup through serve: got %s (%s)", result.Status, result.Reason)
	}
	if strings.Contains(all.String(), "sk-test-serve-secret") {
		t.Errorf("the event stream carries the API key")
	}

	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("serve exit %d after the signal:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop:\n%s", stderr.String())
	}
	// The run is in the audit store, and its spend in the ledger.
	store, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, steps, err := store.Run(context.Background(), result.RunID)
	if err != nil || r.Status != string(coordinator.StatusAnswered) || len(steps) != len(result.Steps) {
		t.Errorf("audit of %s: %+v, %d steps, %v", result.RunID, r, len(steps), err)
	}
	if _, err := store.SpendOn(context.Background(), audit.Day(time.Now())); err != nil {
		t.Errorf("ledger: %v", err)
	}
	if !strings.Contains(stderr.String(), "serving the live demo on http://127.0.0.1:") {
		t.Errorf("stderr does not say where it serves:\n%s", stderr.String())
	}
}

func TestServeListenFails(t *testing.T) {
	fakeBrowser(t)
	code, _, stderr := runCLI(t, "serve", "--addr", "256.0.0.1:1", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code != ExitFailure || !strings.Contains(stderr, "listen") {
		t.Errorf("serve on a bad address: got exit %d, %q", code, stderr)
	}
}

func TestRecord(t *testing.T) {
	fakeBrowser(t)
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "record", "--out", dir, "--db", filepath.Join(t.TempDir(), "a.db"))
	if code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 5 {
		t.Errorf("record printed %d lines, want one per preset:\n%s", n, stdout)
	}
	recs, err := runner.LoadRecordings(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("record wrote %d recordings, want 5", len(recs))
	}
	for _, r := range recs {
		p, _ := presets.ByName(r.Preset)
		if r.Result.Status != p.Expect || r.Browser != "*browsertest.HTTP" || len(r.Timeline) == 0 || r.Result.Simulated != p.Simulated {
			t.Errorf("recording %s: status %s, browser %q, %d moments, simulated %v", r.Preset, r.Result.Status, r.Browser, len(r.Timeline), r.Result.Simulated)
		}
	}
	// One preset again, into the same directory.
	code, stdout, _ = runCLI(t, "record", "--out", dir, "--preset", "sign-in", "--no-frames", "--db", filepath.Join(t.TempDir(), "b.db"))
	if code != ExitOK || !strings.HasPrefix(stdout, "sign-in: human_action_required") {
		t.Errorf("record --preset sign-in: exit %d, %q", code, stdout)
	}
}

func TestRecordRefusesUnexpectedStatus(t *testing.T) {
	fakeBrowser(t)
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return nil, nil, errors.New("no chromium here")
	}
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "record", "--out", dir, "--preset", "lookup", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code != ExitFailure || !strings.Contains(stderr, "record lookup: ended error (browser: no chromium here), want answered: not written") {
		t.Errorf("record with a failing browser: exit %d, %q", code, stderr)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("record wrote %d files for a failed run", len(files))
	}
}

func TestRecordUsage(t *testing.T) {
	fakeBrowser(t)
	for _, args := range [][]string{
		{"--preset", "nope"},
		{"--out", filepath.Join(t.TempDir(), "missing")},
		{"--model", "nope"},
		{"extra"},
	} {
		if code, _, stderr := runCLI(t, append([]string{"record"}, args...)...); code != ExitUsage {
			t.Errorf("record %v: exit %d, %q; want %d", args, code, stderr, ExitUsage)
		}
	}
}

// startServe runs "serve --addr 127.0.0.1:0 args..." until the test ends and returns its base URL.
func startServe(t *testing.T, args ...string) (base string, stderr *testutil.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	oldCtx, oldListen := serveContext, serveListening
	serveContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	serveListening = func(a string) { addrc <- a }
	stderr = &testutil.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not stop:\n%s", stderr.String())
		}
		serveContext, serveListening = oldCtx, oldListen
	})
	select {
	case a := <-addrc:
		return "http://" + a, stderr
	case code := <-done:
		t.Fatalf("serve exited %d before listening:\n%s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen:\n%s", stderr.String())
	}
	return "", stderr
}

// TestServeRecordedOnly: --daily-spend 0 and --recorded-only start the demo in recorded-only
// mode on purpose: health says so, and a run plays a recording labelled with why.
func TestServeRecordedOnly(t *testing.T) {
	for _, flag := range [][]string{{"--daily-spend", "0"}, {"--recorded-only"}} {
		t.Run(flag[0], func(t *testing.T) {
			fakeBrowser(t)
			launched := make(chan struct{}, 10)
			launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
				launched <- struct{}{}
				b := browsertest.NewHTTP(pol)
				return b, b, nil
			}
			base, stderr := startServe(t, append([]string{"--db", filepath.Join(t.TempDir(), "a.db")}, flag...)...)
			res, err := http.Get(base + "/api/health")
			if err != nil {
				t.Fatal(err)
			}
			var h web.HealthJSON
			json.NewDecoder(res.Body).Decode(&h)
			res.Body.Close()
			if h.Live || h.Why != web.WhyRecordedOnly {
				t.Errorf("health: got live=%v why=%q, want false, %q", h.Live, h.Why, web.WhyRecordedOnly)
			}
			res, err = http.Post(base+"/api/runs", "application/json", strings.NewReader(`{"preset":"lookup"}`))
			if err != nil {
				t.Fatal(err)
			}
			var created web.CreatedJSON
			json.NewDecoder(res.Body).Decode(&created)
			res.Body.Close()
			if res.StatusCode != http.StatusAccepted || created.Recorded == nil || created.Recorded.Why != web.WhyRecordedOnly {
				t.Errorf("POST lookup: got %d, recorded %+v; want 202, recorded because %q", res.StatusCode, created.Recorded, web.WhyRecordedOnly)
			}
			if !strings.Contains(stderr.String(), "recorded-only mode") {
				t.Errorf("stderr does not name the mode:\n%s", stderr.String())
			}
			if len(launched) != 0 {
				t.Errorf("recorded-only mode launched %d browsers", len(launched))
			}
		})
	}
}

// TestOpenAIKeyMissing: an openai model without OPENAI_API_KEY (and no OPENAI_BASE_URL for a
// keyless local server) is refused with what is missing, before any network: run and serve.
func TestOpenAIKeyMissing(t *testing.T) {
	fakeRun(t)
	noLaunch(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	const want = "openai:gpt-4.1-mini: OPENAI_API_KEY is not set"
	code, out, errOut := runCLI(t, "run", "--json", "--db", filepath.Join(t.TempDir(), "a.db"), "--task", "Look up SYN-0042", "--model", "openai:gpt-4.1-mini")
	if code != ExitUsage || !strings.Contains(out+errOut, want) {
		t.Errorf("run: got exit %d\nstdout: %s\nstderr: %s\nwant exit %d and %q", code, out, errOut, ExitUsage, want)
	}
	code, _, errOut = runCLI(t, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", "openai:gpt-4.1-mini")
	if code != ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("serve: got exit %d, %q; want exit %d and %q", code, errOut, ExitUsage, want)
	}
	// A local server that needs no key is still allowed.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	pol, err := loadPolicy("", "http://127.0.0.1:8081")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildModel(prefixOpenAI, "gpt-4.1-mini", pol); err != nil {
		t.Errorf("with OPENAI_BASE_URL and no key: %v", err)
	}
}
