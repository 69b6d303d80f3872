package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/extension"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

type resp struct {
	code   int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d is not JSON: %v\n%s", r.code, err, r.body)
	}
}

func (r resp) errText(t *testing.T) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.json(t, &e)
	return e.Error
}

func do(t *testing.T, method, url, body string, hdr map[string]string) resp {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp{code: res.StatusCode, header: res.Header, body: b}
}

// startRun posts body and wants 202.
func startRun(t *testing.T, base, body string, hdr map[string]string) CreatedJSON {
	t.Helper()
	r := do(t, "POST", base+"/api/runs", body, hdr)
	if r.code != http.StatusAccepted {
		t.Fatalf("POST /api/runs %s: got %d %s, want 202", body, r.code, r.body)
	}
	var c CreatedJSON
	r.json(t, &c)
	return c
}

type sseEvent struct {
	id   int
	name string
	data string
}

// readEvents reads a run's event stream to its end.
func readEvents(t *testing.T, url string, lastID int) ([]sseEvent, int) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t, 60*time.Second), "GET", url, nil)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.Itoa(lastID))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, res.StatusCode
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events Content-Type %q", ct)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.Atoi(line[4:])
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return evs, res.StatusCode
}

// waitResult follows a run's stream and returns its result.
func waitResult(t *testing.T, base, id string) runner.ResultJSON {
	t.Helper()
	evs, code := readEvents(t, base+"/api/runs/"+id+"/events", 0)
	if code != http.StatusOK {
		t.Fatalf("events of %s: %d", id, code)
	}
	for _, ev := range evs {
		if ev.name == EventResult {
			var res runner.ResultJSON
			if err := json.Unmarshal([]byte(ev.data), &res); err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatalf("run %s: no result event in %d events", id, len(evs))
	return runner.ResultJSON{}
}

func TestPresetsAPI(t *testing.T) {
	_, ts := newServer(t)
	r := do(t, "GET", ts.URL+"/api/presets", "", nil)
	var got []PresetJSON
	r.json(t, &got)
	want := presets.All()
	if len(got) != len(want) || len(got) != 5 {
		t.Fatalf("GET /api/presets: got %d presets, want 5", len(got))
	}
	for i, p := range want {
		if got[i].Name != p.Name || got[i].Task != p.Task || got[i].Expect != p.Expect || got[i].Simulated != p.Simulated {
			t.Errorf("preset %d:\n\tgot  %+v\n\twant %+v", i, got[i], p)
		}
	}
	if bytes.Contains(r.body, []byte(`"script"`)) || bytes.Contains(r.body, []byte("open_url")) {
		t.Errorf("GET /api/presets shows the scripted turns: %s", r.body)
	}
	// Each says what it shows; the sign-in preset, on a server whose policy offers the takeover
	// (the demo's), ends answered once the visitor signs in, and says so.
	for _, p := range got {
		wantSigned := coordinator.Status("")
		if p.Name == "sign-in" {
			wantSigned = coordinator.StatusAnswered
		}
		if p.Shows == "" || p.ExpectSignedIn != wantSigned {
			t.Errorf("preset %s: shows %q, expect_signed_in %q; want a text and %q", p.Name, p.Shows, p.ExpectSignedIn, wantSigned)
		}
	}
	// Without a sign-in route in the policy nobody can take over: the preset ends
	// human_action_required, and its card says only that.
	src := strings.Replace(string(demosite.PolicyYAML(site.URL)), "signin:", "# signin:", 1)
	pol, err := policy.Parse([]byte(src), "policy without signin")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(pol, withDemo(), WithLedger(newLedger()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range s.presetsJSON() {
		if want, _ := presets.ByName("sign-in"); p.Name == "sign-in" && (p.ExpectSignedIn != "" || p.Shows != want.Shows) {
			t.Errorf("sign-in preset without a takeover: %+v", p)
		}
	}
}

func TestHealth(t *testing.T) {
	ledger := newLedger()
	_, ts := newServer(t, WithLedger(ledger))
	var h HealthJSON
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if h.Status != "ok" || !h.Live || h.Limits.Concurrent != 1 || h.Limits.PerVisitor != 5 || h.Limits.DailySpendUSD != 3 || h.Limits.WindowSeconds != 3600 {
		t.Errorf("GET /api/health: got %+v, want ok, live, the product's limits", h)
	}
	ledger.set(func(l *memLedger) { l.readErr = errors.New("disk I/O error") })
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if h.Live || h.Why != WhyLedger {
		t.Errorf("GET /api/health with an unreadable ledger: got live=%v why=%q, want false, %q", h.Live, h.Why, WhyLedger)
	}
}

func TestCreateRunRefusals(t *testing.T) {
	_, ts := newServer(t, WithAllowedOrigins("chrome-extension://abcdefghijklmnopabcdefghijklmnop"))
	big := `{"task":"` + strings.Repeat("a", MaxRequestBody) + `"}`
	tests := []struct {
		name    string
		body    string
		hdr     map[string]string
		code    int
		errPart string
	}{
		{"not json content type", `{"preset":"lookup"}`, map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
		{"form content type", `preset=lookup`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"body over 4 KiB", big, nil, 413, "over 4096 bytes"},
		{"unknown field", `{"preset":"lookup","model":"gpt-5"}`, nil, 400, `unknown field "model": the body must be one JSON object`},
		{"two objects", `{"preset":"lookup"}{"preset":"lookup"}`, nil, 400, "one JSON object"},
		{"not an object", `["lookup"]`, nil, 400, "one JSON object"},
		{"neither preset nor task", `{}`, nil, 400, "exactly one"},
		{"both preset and task", `{"preset":"lookup","task":"Look up SYN-0042"}`, nil, 400, "exactly one"},
		{"unknown preset", `{"preset":"delete-everything"}`, nil, 400, `unknown preset "delete-everything"; presets: lookup, blocked-write, off-site, sign-in, conflicting-sources`},
		{"task with two IDs", `{"task":"Compare SYN-0001 with SYN-0002"}`, nil, 400, "more than one record ID (SYN-0001, SYN-0002)"},
		{"task without an ID", `{"task":"Look up everything"}`, nil, 400, "no record ID"},
		{"task with a malformed ID", `{"task":"Look up SYN-42"}`, nil, 400, "malformed record ID"},
		{"cross-site origin", `{"preset":"lookup"}`, map[string]string{"Origin": "https://evil.example"}, 403, "origin not allowed"},
		{"extension origin hints at --allow-origin", `{"preset":"lookup"}`, map[string]string{"Origin": "chrome-extension://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}, 403,
			"origin not allowed: start the server with --allow-origin chrome-extension://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
		{"null origin", `{"preset":"lookup"}`, map[string]string{"Origin": "null"}, 403, "origin not allowed"},
		{"other extension", `{"preset":"lookup"}`, map[string]string{"Origin": "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba"}, 403, "origin not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, "POST", ts.URL+"/api/runs", tt.body, tt.hdr)
			if r.code != tt.code || !strings.Contains(r.errText(t), tt.errPart) {
				t.Errorf("POST %.60s:\n\tgot  %d %s\n\twant %d containing %q", tt.body, r.code, r.body, tt.code, tt.errPart)
			}
		})
	}
	// A rejected task says so, and counts against nothing.
	r := do(t, "POST", ts.URL+"/api/runs", `{"task":"Compare SYN-0001 with SYN-0002"}`, nil)
	var rej struct {
		Status string `json:"status"`
	}
	r.json(t, &rej)
	if rej.Status != "rejected" {
		t.Errorf("rejected task: got status %q, want rejected", rej.Status)
	}
}

// TestMethodNotAllowed: a known endpoint asked with a method it does not take answers 405 with
// Allow; an unknown one 404.
func TestMethodNotAllowed(t *testing.T) {
	_, ts := newServer(t)
	tests := []struct {
		method, path string
		code         int
		allow        string
	}{
		{"PUT", "/api/runs", 405, "POST, OPTIONS"},
		{"GET", "/api/runs", 405, "POST, OPTIONS"},
		{"DELETE", "/api/runs/0123456789abcdef", 405, "GET, HEAD"},
		{"POST", "/api/runs/0123456789abcdef/events", 405, "GET, HEAD"},
		{"PATCH", "/api/runs/0123456789abcdef/frame", 405, "GET, HEAD"},
		{"POST", "/api/health", 405, "GET, HEAD"},
		{"PUT", "/api/presets", 405, "GET, HEAD"},
		{"PUT", "/api/nothing", 404, ""},
		{"GET", "/api/runs/x/y", 404, ""},
	}
	for _, tt := range tests {
		r := do(t, tt.method, ts.URL+tt.path, "", nil)
		if r.code != tt.code || r.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s:\n\tgot  %d, Allow %q, %s\n\twant %d, Allow %q", tt.method, tt.path, r.code, r.header.Get("Allow"), r.body, tt.code, tt.allow)
		}
	}
}

func TestOrigins(t *testing.T) {
	ext := "chrome-extension://abcdefghijklmnopabcdefghijklmnop"
	_, ts := newServer(t, WithAllowedOrigins(ext))
	// The page's own origin may start a run, and gets no CORS header (it needs none).
	c := startRun(t, ts.URL, `{"preset":"blocked-write"}`, map[string]string{"Origin": ts.URL})
	waitResult(t, ts.URL, c.ID)
	// The extension may, and gets its CORS header.
	r := do(t, "POST", ts.URL+"/api/runs", `{"preset":"off-site"}`, map[string]string{"Origin": ext})
	if r.code != 202 || r.header.Get("Access-Control-Allow-Origin") != ext {
		t.Fatalf("POST from %s: got %d, ACAO %q; want 202, %q", ext, r.code, r.header.Get("Access-Control-Allow-Origin"), ext)
	}
	var c2 CreatedJSON
	r.json(t, &c2)
	waitResult(t, ts.URL, c2.ID)
	// Preflights: the extension's is answered, anyone else's is refused.
	pre := do(t, "OPTIONS", ts.URL+"/api/runs", "", map[string]string{"Origin": ext, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if pre.code != 204 || pre.header.Get("Access-Control-Allow-Origin") != ext || !strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Errorf("preflight from %s: got %d %v", ext, pre.code, pre.header)
	}
	pre = do(t, "OPTIONS", ts.URL+"/api/runs", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
	if pre.code != 403 || pre.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from a stranger: got %d, ACAO %q; want 403, none", pre.code, pre.header.Get("Access-Control-Allow-Origin"))
	}
	g := do(t, "GET", ts.URL+"/api/presets", "", map[string]string{"Origin": "https://evil.example"})
	if g.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET from a stranger got ACAO %q", g.header.Get("Access-Control-Allow-Origin"))
	}
}

func TestSecurityHeaders(t *testing.T) {
	_, ts := newServer(t)
	for _, path := range []string{"/", "/static/app.js", "/static/style.css", "/api/health", "/api/presets", "/api/runs/nope", "/nope", "/static/nope.js"} {
		r := do(t, "GET", ts.URL+path, "", nil)
		want := map[string]string{
			"Content-Security-Policy": ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("GET %s: %s:\n\tgot  %q\n\twant %q", path, k, got, v)
			}
		}
		if strings.HasPrefix(path, "/api/") && r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, r.header.Get("Cache-Control"))
		}
	}
	for _, c := range []string{"default-src 'self'", "img-src 'self' data: blob:", "frame-ancestors 'none'", "script-src 'self';"} {
		if !strings.Contains(ContentSecurityPolicy, c) {
			t.Errorf("CSP lacks %q", c)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") {
		t.Errorf("CSP allows something unsafe: %s", ContentSecurityPolicy)
	}
	// Types: scripts as JavaScript (module scripts need it), no directory listing.
	if ct := do(t, "GET", ts.URL+"/static/app.js", "", nil).header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("app.js Content-Type %q", ct)
	}
	// render.js is the side panel's one copy, served as the page's.
	if r := do(t, "GET", ts.URL+"/static/render.js", "", nil); r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/javascript") || string(r.body) != extension.RenderJS {
		t.Errorf("GET /static/render.js: %d, Content-Type %q, %d bytes; want 200, JavaScript, extension/render.js (%d bytes)", r.code, r.header.Get("Content-Type"), len(r.body), len(extension.RenderJS))
	}
	for _, path := range []string{"/static/", "/static/..%2fweb.go", "/static/.hidden", "/index.html/"} {
		if r := do(t, "GET", ts.URL+path, "", nil); r.code != 404 && r.code != 400 {
			t.Errorf("GET %s: got %d, want 404", path, r.code)
		}
	}
}

// TestNoInlineScript checks every HTML file the server or the extension ships: scripts only from
// files, no event-handler or style attributes, no javascript: URLs. The CSPs would block them.
func TestNoInlineScript(t *testing.T) {
	check := func(name string, data []byte) {
		doc, err := html.Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				if n.Data == "script" {
					src := ""
					for _, a := range n.Attr {
						if a.Key == "src" {
							src = a.Val
						}
					}
					if src == "" || n.FirstChild != nil {
						t.Errorf("%s: inline <script>", name)
					}
				}
				if n.Data == "style" {
					t.Errorf("%s: inline <style>", name)
				}
				for _, a := range n.Attr {
					if strings.HasPrefix(a.Key, "on") || a.Key == "style" || strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Val)), "javascript:") {
						t.Errorf("%s: <%s %s=%q>", name, n.Data, a.Key, a.Val)
					}
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
	}
	n := 0
	fs.WalkDir(staticFS, ".", func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".html") {
			data, _ := fs.ReadFile(staticFS, p)
			check("web/"+p, data)
			n++
		}
		return nil
	})
	ext, _ := filepath.Glob(filepath.Join(repo, "extension", "*.html"))
	for _, p := range ext {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		check(p, data)
		n++
	}
	if n < 3 {
		t.Errorf("checked %d HTML files, want the page, the side panel and the options", n)
	}
}

func TestRunStream(t *testing.T) {
	_, ts := newServer(t)
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Preset != "lookup" || c.Task != "Look up SYN-0042" || c.Recorded != nil || c.Events != "/api/runs/"+c.ID+"/events" {
		t.Fatalf("POST lookup: got %+v", c)
	}
	evs, code := readEvents(t, ts.URL+c.Events, 0)
	if code != 200 || len(evs) < 4 {
		t.Fatalf("events: %d, %d events", code, len(evs))
	}
	if evs[0].name != EventRun || evs[len(evs)-1].name != EventEnd || evs[len(evs)-2].name != EventResult {
		t.Errorf("event order: first %s, last two %s %s; want run ... result end", evs[0].name, evs[len(evs)-2].name, evs[len(evs)-1].name)
	}
	var steps []coordinator.Step
	for i, ev := range evs {
		if ev.id != i+1 {
			t.Errorf("event %d has id %d", i+1, ev.id)
		}
		if ev.name == EventStep {
			var s coordinator.Step
			json.Unmarshal([]byte(ev.data), &s)
			steps = append(steps, s)
		}
	}
	var res runner.ResultJSON
	json.Unmarshal([]byte(evs[len(evs)-2].data), &res)
	if res.Status != coordinator.StatusAnswered || len(res.Fields) == 0 || res.Fields[0].Label != "Record ID" || len(res.Sources) < 2 {
		t.Errorf("result: got %s, %d fields, %d sources; want answered with Record ID first and two sources", res.Status, len(res.Fields), len(res.Sources))
	}
	for _, s := range res.Sources {
		if s.RetrievedAt.IsZero() || !strings.HasPrefix(s.URL, site.URL) {
			t.Errorf("source %+v: want a demo-site URL with its retrieval time", s)
		}
	}
	if len(steps) != len(res.Steps) || len(steps) == 0 {
		t.Errorf("streamed %d steps, result has %d", len(steps), len(res.Steps))
	}
	// The fake browser has no live view, and says so.
	var run RunJSON
	do(t, "GET", ts.URL+c.URL, "", nil).json(t, &run)
	if run.State != StateDone || run.Result == nil || len(run.Steps) != len(steps) || run.Frame.View != runner.ViewNone {
		t.Errorf("GET run: state %s, result %v, %d steps, view %q", run.State, run.Result != nil, len(run.Steps), run.Frame.View)
	}
	if r := do(t, "GET", ts.URL+c.Frame, "", nil); r.code != 404 {
		t.Errorf("frame of a run without a live view: got %d, want 404", r.code)
	}
	// Resuming after the third event replays the rest; after the last, the stream is over (204).
	rest, _ := readEvents(t, ts.URL+c.Events, 3)
	if len(rest) != len(evs)-3 || rest[0].id != 4 {
		t.Errorf("resume after 3: got %d events, want %d from id 4", len(rest), len(evs)-3)
	}
	if _, code := readEvents(t, ts.URL+c.Events, len(evs)); code != http.StatusNoContent {
		t.Errorf("resume after the end: got %d, want 204", code)
	}
	if r := do(t, "GET", ts.URL+"/api/runs/0123456789abcdef0123456789abcdef", "", nil); r.code != 404 {
		t.Errorf("unknown run: got %d", r.code)
	}
	// Nothing but metadata and the result in what the API says: no tool results as the model saw
	// them, no page text.
	for _, ev := range evs {
		if strings.Contains(ev.data, "untrusted_page_data") || strings.Contains(ev.data, "Synthetic Records is a demonstration") {
			t.Errorf("event %s carries a secret or page data: %.200s", ev.name, ev.data)
		}
	}
}

func TestTypedTaskRun(t *testing.T) {
	_, ts := newServer(t)
	c := startRun(t, ts.URL, `{"task":"  Look up syn-0042 please "}`, nil)
	if c.Task != "Look up syn-0042 please" || c.Preset != "" || c.Simulated {
		t.Errorf("typed task: got %+v", c.RunInfo)
	}
	res := waitResult(t, ts.URL, c.ID)
	if res.Status != coordinator.StatusAnswered || res.RecordID != "SYN-0042" {
		t.Errorf("typed task: got %s %s (%s)", res.Status, res.RecordID, res.Reason)
	}
}

func TestRunFailures(t *testing.T) {
	t.Run("browser does not launch", func(t *testing.T) {
		_, ts := newServer(t, WithLauncher(func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			return nil, nil, errors.New("chromium not found")
		}))
		res := waitResult(t, ts.URL, startRun(t, ts.URL, `{"preset":"lookup"}`, nil).ID)
		if res.Status != coordinator.StatusError || !strings.Contains(res.Reason, "chromium not found") {
			t.Errorf("got %s %q", res.Status, res.Reason)
		}
	})
	t.Run("model cannot be built", func(t *testing.T) {
		_, ts := newServer(t, WithModel("openai:gpt-x", func() (coordinator.Model, error) { return nil, errors.New("model not approved") }))
		res := waitResult(t, ts.URL, startRun(t, ts.URL, `{"preset":"lookup"}`, nil).ID)
		if res.Status != coordinator.StatusRejected || res.Model != "openai:gpt-x" {
			t.Errorf("got %s %q model %q", res.Status, res.Reason, res.Model)
		}
	})
}
