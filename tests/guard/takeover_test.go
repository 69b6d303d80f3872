package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// person is the user name the person types while holding the lease; like secret, it must never
// reach a guarded client.
const person = "person-alice-0417"

var takeoverRE = regexp.MustCompile(`take the wheel at (http://\S+/)`)

// signInSite is a site with a sign-in form whose POST route the policy names as a sign-in route.
type signInSite struct {
	URL   string
	roots string
	mu    sync.Mutex
	hits  map[string]int
	body  string // the last sign-in POST's body
}

func (s *signInSite) count(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[k]
}

// signInPage lays its fields out at fixed fractions of the viewport, so that the test, acting as
// the person, clicks them on the frame as a person would.
const signInPage = `<!doctype html><html><head><title>sign in</title><style>body{margin:0;font:20px sans-serif}
input,button{position:absolute;left:10vw;width:80vw;height:14vh;font-size:20px}</style></head><body>
<h1>Sign in</h1><form method=post action=/session>
<label>Email <input name=email autocomplete=username style="top:10vh"></label>
<label>Password <input type=password name=pw autocomplete=current-password style="top:40vh"></label>
<button style="top:70vh">Sign in</button></form></body></html>`

// Fractions of the viewport where signInPage's fields are.
var (
	emailAt    = [2]float64{0.5, 0.17}
	passwordAt = [2]float64{0.5, 0.47}
	buttonAt   = [2]float64{0.5, 0.77}
)

func startSignInSite(t *testing.T, scheme string) *signInSite {
	t.Helper()
	s := &signInSite{hits: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is kept with the count, so that a test that sees the count sees the body.
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.hits[r.Method+" "+r.URL.Path]++
		if r.Method == http.MethodPost {
			s.body = string(b)
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case r.URL.Path == "/signin":
			fmt.Fprint(w, signInPage)
		case r.Method == http.MethodPost && r.URL.Path == "/session":
			// The site does not echo what was typed: whatever reaches the client of it came
			// through the browser, not the site.
			fmt.Fprint(w, "<!doctype html><html><head><title>signed in</title></head><body><h1>Signed in</h1><p>Welcome back.</p></body></html>")
		default:
			fmt.Fprint(w, "ok")
		}
	})
	if scheme == "http" {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		s.URL = srv.URL
		return s
	}
	srv, ca := testutil.NewTLSServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.roots = filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(s.roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// policy reads the sign-in page and names /session as its sign-in route.
func (s *signInSite) policy(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "policy.yaml")
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/signin, /favicon.ico]\n    signin:\n      routes: [/session]\n      methods: [POST]\n", s.URL)
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// guardedSignIn starts the guard in front of Playwright MCP (mode: the policy's guard mode, "" for none) and
// returns its takeover page.
func guardedSignIn(t *testing.T, s *signInSite, mode string) (*client, string) {
	dir := t.TempDir()
	db := filepath.Join(dir, "audit.db")
	pol := s.policy(t)
	if mode != "" {
		f, err := os.OpenFile(pol, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "guard:\n  mode: %s\n", mode)
		f.Close()
	}
	args := append([]string{"guard", "--policy", pol, "--db", db, "--", "node"}, upstreamArgs()...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "BROWSER_AGENT_DB=", "BROWSER_AGENT_UPSTREAM_ROOTS="+s.roots)
	c := connect(t, cmd, dir)
	c.db = db
	var m []string
	testutil.Eventually(10*time.Second, func() bool { m = takeoverRE.FindStringSubmatch(c.stderr.String()); return m != nil })
	if m == nil {
		t.Fatalf("the guard did not name its takeover page:\n%s", c.stderr)
	}
	return c, m[1]
}

// wheel posts to the takeover page as the person: path is take, release or input.
func wheel(t *testing.T, page, path string, in map[string]any) int {
	t.Helper()
	var body io.Reader
	req, _ := http.NewRequest(http.MethodPost, page+path, nil)
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
		req, _ = http.NewRequest(http.MethodPost, page+path, body)
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// personTypes is the person, holding the lease: a click on the field at, then text.
func personTypes(t *testing.T, page string, at [2]float64, text string) {
	t.Helper()
	if st := wheel(t, page, "input", map[string]any{"kind": "click", "x": at[0], "y": at[1]}); st != http.StatusNoContent {
		t.Fatalf("the person's click: status %d, want 204", st)
	}
	if st := wheel(t, page, "input", map[string]any{"kind": "text", "text": text}); st != http.StatusNoContent {
		t.Fatalf("the person's typing: status %d, want 204", st)
	}
}

// personSignsIn is the person, holding the lease, signing in: the email and the password typed,
// Sign in clicked, and the sign-in POST seen by the site.
func personSignsIn(t *testing.T, g *client, s *signInSite, page string) {
	t.Helper()
	personTypes(t, page, emailAt, person)
	personTypes(t, page, passwordAt, secret)
	if st := wheel(t, page, "input", map[string]any{"kind": "click", "x": buttonAt[0], "y": buttonAt[1]}); st != http.StatusNoContent {
		t.Fatalf("the person's click on Sign in: status %d, want 204", st)
	}
	if !testutil.Eventually(15*time.Second, func() bool { return s.count("POST /session") > 0 }) {
		t.Fatalf("the person's sign-in POST did not reach the site under the lease\nstderr:\n%s", g.stderr)
	}
}

func TestGuardTakeoverHTTP(t *testing.T)  { testGuardTakeover(t, "http") }
func TestGuardTakeoverHTTPS(t *testing.T) { testGuardTakeover(t, "https") }

// testGuardTakeover: a person takes the wheel of the guard's browser at a sign-in page the client
// cannot pass (a credential field), signs in themselves through the takeover page and hands back.
// The sign-in POST reaches the site exactly once, under the lease only; the client is refused
// while the person has the wheel, its next result says a person changed the page, its old refs
// are void, and nothing the person typed reaches it, the guard's stderr or the audit store. The
// positive control: the same Playwright MCP unguarded shows the typed values to its client.
func testGuardTakeover(t *testing.T, scheme string) {
	s := startSignInSite(t, scheme)
	g, page := guardedSignIn(t, s, "")

	t.Run("without the lease the sign-in POST is refused", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
		text, isErr := g.call("browser_type", map[string]any{"target": g.ref("textbox", "Password"), "element": "Password", "text": secret})
		if !isErr || !strings.Contains(text, "guard.credential") {
			t.Errorf("the client typing a password: got %q, want a guard.credential refusal (a person signs in)", text)
		}
		g.call("browser_click", map[string]any{"target": g.ref("button", "Sign in"), "element": "Sign in"})
		g.call("browser_snapshot", nil)
		if n := s.count("POST /session"); n != 0 {
			t.Errorf("%d sign-in POSTs reached the site without a lease, want 0", n)
		}
		if st := wheel(t, page, "input", map[string]any{"kind": "text", "text": "x"}); st != http.StatusConflict {
			t.Errorf("input without the lease: status %d, want 409", st)
		}
	})

	t.Run("a person signs in under the lease", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
		stale := g.ref("button", "Sign in")
		if st := wheel(t, page, "take", nil); st != http.StatusOK {
			t.Fatalf("take the wheel: status %d, want 200", st)
		}
		if st := wheel(t, page, "take", nil); st != http.StatusConflict {
			t.Errorf("a second take: status %d, want 409", st)
		}
		text, isErr := g.call("browser_snapshot", nil)
		if !isErr || !strings.Contains(text, "a person has the wheel") {
			t.Errorf("a call while a person has the wheel: got %q, want it refused", text)
		}
		resp, err := http.Get(page + "frame")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("the live view: status %d, %d bytes, want a PNG", resp.StatusCode, len(b))
		}
		personSignsIn(t, g, s, page)
		s.mu.Lock()
		got := s.body
		s.mu.Unlock()
		if !strings.Contains(got, "pw="+secret) || !strings.Contains(got, "email="+person) {
			t.Errorf("the site got %d bytes that are not the person's sign-in", len(got))
		}
		if st := wheel(t, page, "release", nil); st != http.StatusOK {
			t.Fatalf("hand back: status %d, want 200", st)
		}
		text, isErr = g.call("browser_click", map[string]any{"target": stale, "element": "Sign in"})
		if !isErr || !strings.Contains(text, "changed by a person") {
			t.Errorf("a ref from before the takeover: got %q, want it refused as void", text)
		}
		text = g.mustCall("browser_snapshot", nil)
		if !strings.Contains(text, "the page was changed by a person") {
			t.Errorf("the first result after hand-back does not say a person changed the page:\n%s", text)
		}
		if !strings.Contains(text, "Signed in") {
			t.Errorf("the client does not see the signed-in page:\n%s", text)
		}
		if n := s.count("POST /session"); n != 1 {
			t.Errorf("%d sign-in POSTs reached the site, want exactly 1", n)
		}
	})

	t.Run("typed and handed back unsent: the result is withheld", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
		stale := g.ref("button", "Sign in")
		if st := wheel(t, page, "take", nil); st != http.StatusOK {
			t.Fatalf("take the wheel: status %d, want 200", st)
		}
		personTypes(t, page, passwordAt, secret)
		if st := wheel(t, page, "release", nil); st != http.StatusOK {
			t.Fatalf("hand back: status %d, want 200", st)
		}
		// The button is still there with its role and name: only the takeover voids its ref.
		text, isErr := g.call("browser_click", map[string]any{"target": stale, "element": "Sign in"})
		if !isErr || !strings.Contains(text, "changed by a person") {
			t.Errorf("a ref from before the takeover, still on the page: got %q, want it refused as void", text)
		}
		text, isErr = g.call("browser_snapshot", nil)
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("a snapshot of the person's filled password field: got %q, want it withheld whole", text)
		}
		if st := wheel(t, page, "release", nil); st != http.StatusConflict {
			t.Errorf("hand back twice: status %d, want 409", st)
		}
		if n := s.count("POST /session"); n != 1 {
			t.Errorf("%d sign-in POSTs reached the site, want exactly 1", n)
		}
	})

	t.Run("nothing typed reaches the client, stderr or the audit", func(t *testing.T) {
		if g.saw(secret) || g.saw(person) {
			t.Errorf("what the person typed reached the client")
		}
		g.cs.Close()
		// The guard's stderr after it stopped: its last lines included.
		testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.stderr.String(), "takeover ends") })
		if e := g.stderr.String(); strings.Contains(e, secret) || strings.Contains(e, person) {
			t.Errorf("what the person typed reached the guard's stderr")
		}
		_, steps := g.auditRun(t)
		var begins, ends, allowed, denied int
		for _, st := range steps {
			if strings.Contains(st.Reason, secret) || strings.Contains(st.Reason, person) {
				t.Errorf("step %d's reason holds what the person typed", st.N)
			}
			switch {
			case st.Tool == "takeover" && strings.HasPrefix(st.Reason, "takeover begins"):
				begins++
			case st.Tool == "takeover" && strings.HasPrefix(st.Reason, "takeover ends"):
				ends++
			// The proxy's decisions on the sign-in POST (its path is redacted in the audit: the
			// policy does not list it as read), by rule.
			case st.Tool == "request" && st.Allowed() && strings.HasSuffix(st.Rule, " signin /session"):
				allowed++
			case st.Tool == "request" && !st.Allowed() && st.Rule == "method POST":
				denied++
			}
		}
		if begins != 2 || ends != 2 || allowed != 1 || denied != 1 {
			for _, st := range steps {
				t.Logf("step %d %s %s %s%s %s (%s)", st.N, st.Tool, st.Verdict, st.Origin, st.Path, st.Rule, st.Reason)
			}
			t.Errorf("audit: %d takeover begins, %d ends, %d sign-in POSTs allowed, %d refused; want 2, 2, 1, 1", begins, ends, allowed, denied)
		}
		for _, f := range []string{g.db, g.db + "-wal"} {
			if raw, err := os.ReadFile(f); err == nil && (bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(person))) {
				t.Errorf("what the person typed reached the audit store (%s)", filepath.Base(f))
			}
		}
	})

	t.Run("control", func(t *testing.T) {
		u := unguarded(t, &site{roots: s.roots}).with(t)
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
		u.mustCall("browser_type", map[string]any{"target": u.ref("textbox", "Email"), "element": "Email", "text": person})
		u.mustCall("browser_type", map[string]any{"target": u.ref("textbox", "Password"), "element": "Password", "text": secret})
		if text := u.mustCall("browser_snapshot", nil); !strings.Contains(text, secret) || !strings.Contains(text, person) {
			t.Errorf("unguarded: the snapshot does not show the typed values: the checks prove nothing\n%s", text)
		}
	})
}

// personBrowser is a Chromium the test launched with a DevTools port, which the unguarded
// Playwright MCP attaches to (--cdp-endpoint): the test types into it as the person does through
// the guard's takeover page, with the browser's own input events.
type personBrowser struct {
	endpoint string // http://127.0.0.1:PORT, for Playwright MCP
	ws       *websocket.Conn
	next     int
}

func launchPersonBrowser(t *testing.T, https bool) *personBrowser {
	t.Helper()
	args := []string{"--remote-debugging-port=0"}
	if https {
		args = append(args, "--ignore-certificate-errors")
	}
	dir := testbrowser.Process(t, "about:blank", args...)
	var port, path string
	testutil.Eventually(30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if err != nil || len(lines) != 2 {
			return false
		}
		port, path = lines[0], lines[1]
		return true
	})
	if port == "" {
		t.Fatal("the control's Chromium did not open its DevTools port")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.CloseNow() })
	return &personBrowser{endpoint: "http://127.0.0.1:" + port, ws: ws}
}

// call sends one DevTools command and waits for its answer, skipping events.
func (p *personBrowser) call(t *testing.T, session, method string, params map[string]any) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.next++
	msg := map[string]any{"id": p.next, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if err := p.ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := p.ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if json.Unmarshal(b, &r) != nil || r.ID != p.next {
			continue
		}
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	}
}

// tabOf is the target of the tab showing url (the last one listed), "" when no tab shows it.
func (p *personBrowser) tabOf(t *testing.T, url string) string {
	t.Helper()
	var targets struct {
		Infos []struct{ TargetID, Type, URL string } `json:"targetInfos"`
	}
	json.Unmarshal(p.call(t, "", "Target.getTargets", nil), &targets)
	id := ""
	for _, ti := range targets.Infos {
		if ti.Type == "page" && ti.URL == url {
			id = ti.TargetID
		}
	}
	return id
}

// attach attaches to the tab showing url and returns the DevTools session; the test fails when no
// tab shows it.
func (p *personBrowser) attach(t *testing.T, url string) string {
	t.Helper()
	id := p.tabOf(t, url)
	if id == "" {
		t.Fatalf("no tab shows %s", url)
	}
	var att struct{ SessionID string }
	json.Unmarshal(p.call(t, "", "Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}), &att)
	return att.SessionID
}

// types clicks at (fractions of the viewport of the tab showing url) and inserts text, as the
// guard's takeover does.
func (p *personBrowser) types(t *testing.T, url string, at [2]float64, text string) {
	t.Helper()
	session := p.attach(t, url)
	var m struct {
		VP struct{ ClientWidth, ClientHeight float64 } `json:"cssLayoutViewport"`
	}
	json.Unmarshal(p.call(t, session, "Page.getLayoutMetrics", nil), &m)
	x, y := at[0]*m.VP.ClientWidth, at[1]*m.VP.ClientHeight
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		p.call(t, session, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1})
	}
	p.call(t, session, "Input.insertText", map[string]any{"text": text})
	p.call(t, "", "Target.detachFromTarget", map[string]any{"sessionId": session})
}

func TestGuardTakeoverControlHTTP(t *testing.T)  { testGuardTakeoverControl(t, "http") }
func TestGuardTakeoverControlHTTPS(t *testing.T) { testGuardTakeoverControl(t, "https") }

// testGuardTakeoverControl is the takeover's positive control on the person's own path: what a
// person types into the browser with its input events (as through the takeover page) reaches
// the client of Playwright MCP unguarded, in its snapshot. The guard's test above sees none of it.
func testGuardTakeoverControl(t *testing.T, scheme string) {
	s := startSignInSite(t, scheme)
	pb := launchPersonBrowser(t, scheme == "https")
	dir := t.TempDir()
	cmd := exec.Command("node", playwrite, "--cdp-endpoint", pb.endpoint)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	u := connect(t, cmd, dir)
	u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
	pb.types(t, s.URL+"/signin", emailAt, person)
	pb.types(t, s.URL+"/signin", passwordAt, secret)
	if text := u.mustCall("browser_snapshot", nil); !strings.Contains(text, secret) || !strings.Contains(text, person) {
		t.Errorf("unguarded: the person's typing is not in the client's snapshot: the guard's checks prove nothing\n%s", text)
	}
}

func TestGuardTakeoverWriteHTTP(t *testing.T)  { testGuardTakeoverWrite(t, "http") }
func TestGuardTakeoverWriteHTTPS(t *testing.T) { testGuardTakeoverWrite(t, "https") }

// testGuardTakeoverWrite: the takeover in write mode. Without the lease the sign-in POST is
// refused and held for nobody; under the lease it is the person's own and reaches the site once,
// held for nobody; nothing typed reaches the client.
func testGuardTakeoverWrite(t *testing.T, scheme string) {
	s := startSignInSite(t, scheme)
	g, page := guardedSignIn(t, s, "write")
	g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
	text := g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Sign in"), "element": "Sign in"})
	// The sign-in route is not a read route: the proxy refuses its POST (403) and holds nothing.
	if n := s.count("POST /session"); n != 0 || !strings.Contains(text, "403") || strings.Contains(text, "held for a person") {
		t.Errorf("without the lease: %d sign-in POSTs reached the site, the click's result %q; want 0, refused, not held", n, text)
	}
	g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
	if st := wheel(t, page, "take", nil); st != http.StatusOK {
		t.Fatalf("take the wheel: status %d, want 200", st)
	}
	personSignsIn(t, g, s, page)
	if st := wheel(t, page, "release", nil); st != http.StatusOK {
		t.Fatalf("hand back: status %d, want 200", st)
	}
	text = g.mustCall("browser_snapshot", nil)
	if !strings.Contains(text, "the page was changed by a person") || strings.Contains(text, "held for a person") {
		t.Errorf("after hand-back in write mode: want the note and no hold:\n%s", text)
	}
	if n := s.count("POST /session"); n != 1 {
		t.Errorf("%d sign-in POSTs reached the site, want exactly 1", n)
	}
	if g.saw(secret) || g.saw(person) || strings.Contains(g.stderr.String(), secret) || strings.Contains(g.stderr.String(), person) {
		t.Errorf("what the person typed reached the client or the guard's stderr")
	}
}

// eval evaluates expr in the tab showing url (the person's own page, here the takeover page) and
// returns its value as JSON.
func (p *personBrowser) eval(t *testing.T, url, expr string) string {
	t.Helper()
	session := p.attach(t, url)
	defer p.call(t, "", "Target.detachFromTarget", map[string]any{"sessionId": session})
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
	}
	json.Unmarshal(p.call(t, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}), &r)
	return string(r.Result.Value)
}

// slowTakeoverNet slows the takeover page's fetches down in the person's browser: the first
// answer to GET state is held until openState() is called (stateDone settles when the page has
// it), and each picture (GET frame) comes 1.2 s late, longer than the page's pause between them.
const slowTakeoverNet = `(() => {
  const f = window.fetch.bind(window);
  let open, done; const gate = new Promise(r => open = r);
  window.openState = open; window.stateDone = new Promise(r => done = r);
  let first = true;
  window.fetch = (u, o) => {
    const s = String(u), p = f(u, o);
    if (s === 'state' && first) { first = false; return p.then(r => gate.then(() => { done(); return r; })); }
    if (s.startsWith('frame')) return p.then(r => new Promise(ok => setTimeout(() => ok(r), 1200)));
    return p;
  };
})()`

// TestGuardTakeoverPage: the takeover page itself, in a browser, as a person uses it: Take the
// wheel, the live view shows frames, a click on the picture and text typed in the page's box sign
// in, Hand back. (The page is on loopback over http whatever the site's scheme; the site's
// schemes are covered by TestGuardTakeoverHTTP/HTTPS through the same endpoints.)
func TestGuardTakeoverPage(t *testing.T) {
	s := startSignInSite(t, "http")
	g, page := guardedSignIn(t, s, "")
	g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/signin"})
	pb := launchPersonBrowser(t, false)
	// The person's network is slow, as on a busy machine: the page's first question about the
	// lease is answered only after Take the wheel was, and every picture takes longer than the
	// page's pause between pictures.
	var tab struct{ TargetID string }
	json.Unmarshal(pb.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"}), &tab)
	var att struct{ SessionID string }
	json.Unmarshal(pb.call(t, "", "Target.attachToTarget", map[string]any{"targetId": tab.TargetID, "flatten": true}), &att)
	pb.call(t, att.SessionID, "Page.enable", nil)
	pb.call(t, att.SessionID, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": slowTakeoverNet})
	pb.call(t, att.SessionID, "Page.navigate", map[string]any{"url": page}) // the script lives as long as this session: it stays attached
	if !testutil.Eventually(10*time.Second, func() bool {
		return pb.tabOf(t, page) != "" && pb.eval(t, page, "document.readyState === 'complete' && !!document.getElementById('take')") == "true"
	}) {
		t.Fatalf("the takeover page did not load")
	}
	pb.eval(t, page, "document.getElementById('take').click()")
	if !testutil.Eventually(10*time.Second, func() bool {
		return pb.eval(t, page, "!document.getElementById('in').hidden") == "true"
	}) {
		t.Fatalf("Take the wheel: the page does not say the person has it: %s", pb.eval(t, page, "document.getElementById('st').textContent"))
	}
	// The answer to the page's first question (nobody has the wheel) arrives now, after the take.
	pb.eval(t, page, "(async () => { openState(); await stateDone; await new Promise(r => setTimeout(r, 300)); })()")
	if got := pb.eval(t, page, "document.getElementById('st').textContent"); !strings.Contains(got, "You have the wheel") {
		t.Errorf("an answer to an older question undid Take the wheel: the page says %s", got)
	}
	if !testutil.Eventually(15*time.Second, func() bool {
		return pb.eval(t, page, "document.getElementById('view').naturalWidth > 0") == "true"
	}) {
		t.Fatalf("the live view shows no frame after Take the wheel: %s", pb.eval(t, page, "document.getElementById('frame').textContent"))
	}
	if text, isErr := g.call("browser_snapshot", nil); !isErr || !strings.Contains(text, "a person has the wheel") {
		t.Errorf("a call while a person has the wheel: got %q, want it refused", text)
	}
	clickAt := func(at [2]float64) {
		pb.eval(t, page, fmt.Sprintf(`(() => { const i = document.getElementById('view'); const b = i.getBoundingClientRect();
			i.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: b.left + b.width * %g, clientY: b.top + b.height * %g})); })()`, at[0], at[1]))
	}
	typeText := func(s string) {
		pb.eval(t, page, fmt.Sprintf(`(() => { document.getElementById('text').value = %q; document.getElementById('tf').requestSubmit(); })()`, s))
	}
	// The page sends its input one event at a time, in order (its queue, q).
	clickAt(emailAt)
	typeText(person)
	clickAt(passwordAt)
	typeText(secret)
	clickAt(buttonAt)
	pb.eval(t, page, "q")
	if !testutil.Eventually(15*time.Second, func() bool { return s.count("POST /session") > 0 }) {
		t.Fatalf("the sign-in through the takeover page did not reach the site")
	}
	s.mu.Lock()
	got := s.body
	s.mu.Unlock()
	if !strings.Contains(got, "pw="+secret) || !strings.Contains(got, "email="+person) {
		t.Errorf("the site got %d bytes that are not the person's sign-in", len(got))
	}
	pb.eval(t, page, "document.getElementById('back').click()")
	if !testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.stderr.String(), "takeover ends") }) {
		t.Fatalf("Hand back did not end the lease:\n%s", g.stderr)
	}
	text := g.mustCall("browser_snapshot", nil)
	if !strings.Contains(text, "the page was changed by a person") {
		t.Errorf("after Hand back, the result does not say a person changed the page:\n%s", text)
	}
	if g.saw(secret) || g.saw(person) || strings.Contains(g.stderr.String(), secret) {
		t.Errorf("what the person typed reached the client or the guard's stderr")
	}
}
