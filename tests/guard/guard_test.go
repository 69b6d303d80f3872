package guard_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// secret is the password the hostile pages hold; it must never reach a guarded client.
const secret = "hunter2-Secret-7731"

// site is a hostile site and an off-site server, with what they were asked.
type site struct {
	URL, Offsite string
	Frame        string // another allowed origin, framed by /framed
	mu           sync.Mutex
	hits         map[string]int      // "METHOD /path" on the site, "offsite /path" off it
	bodies       map[string][]string // the bodies of the writes that reached the site, by "METHOD /path"
	gate         chan struct{}       // what /hit/wait waits for: open
	roots        string              // PEM file of the https servers' authorities ("" over http)
}

func (s *site) hit(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[k]++
}

// open lets the pages waiting on /hit/wait go on.
func (s *site) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate)
	s.gate = make(chan struct{})
}

// sent are the bodies of the writes "METHOD /path" that reached the site.
func (s *site) sent(k string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies[k]...)
}

func (s *site) count(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[k]
}

const pages = `
/: <h1>Hostile site</h1><a href="/form">form</a>
/login: <h1>Sign in</h1><label>Email <input name=email></label><label>Password <input type=password name=pw autocomplete=current-password></label><button>Sign in</button>
/filled: <h1>Welcome back</h1><label>Password <input type=password id=pw></label><script>document.getElementById('pw').value = '` + secret + `'</script>
/form: <h1>Comment</h1><form method=post action=/write><label>Comment <input name=c value=hello></label><button>Save</button></form>
/swap: <h1>Details</h1><button id=b onclick="fetch('/hit/details')">Show details</button><script>fetch('/hit/wait').then(() => { const b = document.getElementById('b'); b.textContent = 'Delete everything'; b.onclick = () => fetch('/hit/other'); fetch('/swapped'); })</script>
/dialog: <h1>Dialogs</h1><button onclick="if (confirm('Really?')) fetch('/hit/confirmed')">Ask</button><p>after</p>
/search: <h1>Search</h1><label>Search <input name=q></label>
/hidden-filled: <h1>Account</h1><label>Password <input type=password id=pw autocomplete=current-password></label><script>document.getElementById('pw').value = '` + secret + `'; const d = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value'); Object.defineProperty(HTMLInputElement.prototype, 'value', {get() { return this.type === 'password' ? '' : d.get.call(this); }, set(v) { d.set.call(this, v); }, configurable: true});</script>
/book: <h1>Trips</h1><form method=post action=/book-search><label>Destination <input name=dest></label><button>Search trips</button></form>
/wallet: <h1>Wallet</h1><form method=post action=/book-search><label>Card number <input name=cardnumber autocomplete=cc-number></label><input type=hidden name=note value="4111 1111 1111 1111"><button>Pay now</button></form>
/inner: <label>Password <input type=password id=pw></label><script>document.getElementById('pw').value = '` + secret + `'</script>
`

// startSite serves the hostile pages and an off-site server, over http or https.
func startSite(t *testing.T, scheme string) *site {
	t.Helper()
	s := &site{hits: map[string]int{}, bodies: map[string][]string{}, gate: make(chan struct{})}
	byPath := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(pages)+"\n"+strings.TrimSpace(tripPages), "\n") {
		p, body, _ := strings.Cut(l, ": ")
		byPath[p] = "<!doctype html><html><head><title>hostile</title></head><body>" + body + "</body></html>"
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A write's body is kept before it is counted: a test that saw the count sees the body.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			b, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.bodies[r.Method+" "+r.URL.Path] = append(s.bodies[r.Method+" "+r.URL.Path], string(b))
			s.mu.Unlock()
		}
		s.hit(r.Method + " " + r.URL.Path)
		switch {
		case r.URL.Path == "/hit/wait":
			s.mu.Lock()
			gate := s.gate
			s.mu.Unlock()
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			fmt.Fprint(w, "ok")
		case r.URL.Path == "/framed":
			fmt.Fprintf(w, "<html><body><h1>Framed</h1><iframe src=%q></iframe></body></html>", s.Frame+"/inner")
		case strings.HasPrefix(r.URL.Path, "/vis/") && visPages[strings.TrimPrefix(r.URL.Path, "/vis/")] != "":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!doctype html><html><head><title>vis</title></head><body>"+visPages[strings.TrimPrefix(r.URL.Path, "/vis/")]+"</body></html>")
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, s.Offsite+"/landing", http.StatusFound)
		case byPath[r.URL.Path] != "":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, strings.ReplaceAll(byPath[r.URL.Path], "FRAME_ORIGIN", s.Frame))
		default:
			fmt.Fprint(w, "ok")
		}
	})
	off := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hit("offsite " + r.URL.Path)
		fmt.Fprint(w, "<html><body><h1>Off site</h1></body></html>")
	})
	if scheme == "http" {
		a, b, f := httptest.NewServer(h), httptest.NewServer(off), httptest.NewServer(h)
		t.Cleanup(a.Close)
		t.Cleanup(b.Close)
		t.Cleanup(f.Close)
		s.URL, s.Offsite, s.Frame = a.URL, b.URL, f.URL
		return s
	}
	a, ca := testutil.NewTLSServer(h)
	b, cb := testutil.NewTLSServer(off)
	f, cf := testutil.NewTLSServer(h)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	t.Cleanup(f.Close)
	s.URL, s.Offsite, s.Frame = a.URL, b.URL, f.URL
	var pemb []byte
	for _, c := range []*[]byte{&ca.Raw, &cb.Raw, &cf.Raw} {
		pemb = append(pemb, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: *c})...)
	}
	s.roots = filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(s.roots, pemb, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// policy allows the hostile site's read routes and nothing off it.
func (s *site) policy(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "policy.yaml")
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/, /login, /filled, /hidden-filled, /framed, /form, /swap, /swapped, /dialog, /search, /redirect, \"/hit/{what}\", \"/vis/{page}\", /book, /book-search, /wallet, /trip, /trip-search, /trip-details, /trip-sneaky, /trip-card, /trip-psp, /trip-note, \"/trip-seat/{n}\", /favicon.ico]\n"+
		"  - origin: %s\n    read: [/inner, /favicon.ico]\nlimits:\n  max_redirect_hops: 5\n", s.URL, s.Frame)
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// client is one MCP session with everything it was given.
type client struct {
	t      testing.TB
	cs     *mcp.ClientSession
	stderr *testutil.Buffer
	mu     *sync.Mutex
	seen   *strings.Builder // every text the client received
	db     string
}

// with is c reporting to t (a subtest).
func (c *client) with(t *testing.T) *client {
	d := *c
	d.t = t
	return &d
}

// auditRun is the one run c's audit store holds, and its steps (the session closed first, so
// that the store has every row).
func (c *client) auditRun(t *testing.T) (audit.Run, []audit.Step) {
	t.Helper()
	store, err := audit.Open(c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	runs, err := store.Runs(ctx, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v, want one", runs, err)
	}
	run, steps, err := store.Run(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return run, steps
}

func upstreamArgs() []string {
	return []string{playwrite, "--headless", "--isolated", "--executable-path", testbrowser.Chromium(), "--no-sandbox"}
}

// guarded starts browser-agent guard in front of Playwright MCP.
func guarded(t *testing.T, s *site) *client { return guardedBy(t, s.policy(t), s.roots) }

// guardedBy starts browser-agent guard with the policy file policy in front of Playwright MCP;
// roots is the PEM file of the https servers' authorities ("" over http).
func guardedBy(t testing.TB, policy, roots string) *client {
	dir := t.TempDir()
	db := filepath.Join(dir, "audit.db")
	args := append([]string{"guard", "--policy", policy, "--db", db, "--", "node"}, upstreamArgs()...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "BROWSER_AGENT_DB=", "BROWSER_AGENT_UPSTREAM_ROOTS="+roots)
	c := connect(t, cmd, dir)
	c.db = db
	return c
}

// unguarded starts the same Playwright MCP with nothing in front: the positive control.
func unguarded(t *testing.T, s *site) *client { return unguardedOver(t, s.roots != "") }

// unguardedOver starts Playwright MCP with nothing in front, taking any certificate when tls.
func unguardedOver(t testing.TB, tls bool) *client {
	dir := t.TempDir()
	args := upstreamArgs()
	if tls {
		args = append(args, "--ignore-https-errors")
	}
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	return connect(t, cmd, dir)
}

func connect(t testing.TB, cmd *exec.Cmd, dir string) *client {
	t.Helper()
	c := &client{t: t, stderr: &testutil.Buffer{}, mu: &sync.Mutex{}, seen: &strings.Builder{}}
	cmd.Dir, cmd.Stderr = dir, c.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "guard-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, c.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

func (c *client) tools() []string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, tl := range l.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// call calls a tool and returns its text and whether it is an error.
func (c *client) call(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.mu.Lock()
		c.seen.WriteString(err.Error())
		c.mu.Unlock()
		return err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	c.mu.Lock()
	c.seen.WriteString(b.String())
	c.mu.Unlock()
	return b.String(), res.IsError
}

// mustCall is call that fails the test on an error result.
func (c *client) mustCall(name string, args map[string]any) string {
	c.t.Helper()
	text, isErr := c.call(name, args)
	if isErr {
		c.t.Fatalf("%s %v: error result:\n%s\nstderr:\n%s", name, args, text, c.stderr)
	}
	return text
}

var refLineRE = regexp.MustCompile(`- (\w+) \\?"([^"\\]*)\\?"[^\n]*?\[ref=((?:f[0-9]+)?e[0-9]+)\]`)

// ref is the ref of the element with role and name in the client's latest snapshot.
func (c *client) ref(role, name string) string {
	c.t.Helper()
	text := c.mustCall("browser_snapshot", nil)
	for _, m := range refLineRE.FindAllStringSubmatch(text, -1) {
		if m[1] == role && m[2] == name {
			return m[3]
		}
	}
	c.t.Fatalf("no %s %q in the snapshot:\n%s", role, name, text)
	return ""
}

func (c *client) saw(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Contains(c.seen.String(), s)
}

// scriptTools are Playwright MCP's tools that run script or code in the page, or read and write
// files, requests and storage: none may be listed by the guard.
var scriptTools = []string{"browser_evaluate", "browser_run_code_unsafe", "browser_file_upload", "browser_drop",
	"browser_network_requests", "browser_network_request", "browser_handle_dialog", "browser_fill_form"}

func TestGuardHTTP(t *testing.T)  { testGuard(t, "http") }
func TestGuardHTTPS(t *testing.T) { testGuard(t, "https") }

// testGuard runs every promise through the guard, then each positive control through the same
// Playwright MCP unguarded: one upstream each.
func testGuard(t *testing.T, scheme string) {
	s := startSite(t, scheme)
	g := guarded(t, s)

	t.Run("the guard launched its browser behind the wall", func(t *testing.T) {
		// This machine can make namespaces (the wall's own tests need them): wall auto is on.
		if !strings.Contains(g.stderr.String(), "guard: wall on: network namespace") {
			t.Errorf("the guard does not say its browser is walled:\n%s", g.stderr)
		}
	})
	t.Run("script tools are not listed", func(t *testing.T) {
		g := g.with(t)
		tools := g.tools()
		for _, n := range scriptTools {
			if slices.Contains(tools, n) {
				t.Errorf("guard lists %s; its tools: %v", n, tools)
			}
		}
		if !slices.Contains(tools, "browser_click") || !slices.Contains(tools, "browser_navigate") {
			t.Errorf("guard does not list browser_click and browser_navigate: %v", tools)
		}
	})
	t.Run("a password is never typed and a filled one never shown", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/login"})
		pw := g.ref("textbox", "Password")
		text, isErr := g.call("browser_type", map[string]any{"target": pw, "element": "Password", "text": secret})
		if !isErr || !strings.Contains(text, "guard.credential") {
			t.Errorf("typing into the password field: got %q, want a guard.credential refusal", text)
		}
		// An ordinary field on the same page takes text (a person may type an email).
		email := g.ref("textbox", "Email")
		g.mustCall("browser_type", map[string]any{"target": email, "element": "Email", "text": "ann@example.com"})
		// A page that filled its password field itself: every result is withheld whole.
		text, isErr = g.call("browser_navigate", map[string]any{"url": s.URL + "/filled"})
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("navigating to a page with a filled password: got %q, want guard.withheld", text)
		}
		text, isErr = g.call("browser_snapshot", nil)
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("snapshot of a page with a filled password: got %q, want guard.withheld", text)
		}
		// The same in a frame of another origin.
		text, isErr = g.call("browser_navigate", map[string]any{"url": s.URL + "/framed"})
		if s.count("GET /inner") == 0 {
			t.Errorf("the frame was not loaded: the frame check proves nothing")
		}
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("navigating to a page whose other-origin frame has a filled password: got %q, want guard.withheld", text)
		}
		if g.saw(secret) {
			t.Errorf("the guarded client was shown the password")
		}
	})
	t.Run("a filled password hidden from the page's own world is withheld", func(t *testing.T) {
		// The page filled its password field, then changed its own world's value getter so that
		// a reader running there sees it empty: the guard reads in a world of its own.
		g := g.with(t)
		text, isErr := g.call("browser_navigate", map[string]any{"url": s.URL + "/hidden-filled"})
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("navigating to a page that hides its filled password from its own world: got %q, want guard.withheld", text)
		}
		text, isErr = g.call("browser_snapshot", nil)
		if !isErr || !strings.Contains(text, "guard.withheld") {
			t.Errorf("snapshot of that page: got %q, want guard.withheld", text)
		}
		if g.saw(secret) {
			t.Errorf("the guarded client was shown the hidden password")
		}
	})
	t.Run("a form's post writes nothing", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/form"})
		g.call("browser_click", map[string]any{"target": g.ref("button", "Save"), "element": "Save"})
		g.call("browser_snapshot", nil)
		if n := s.count("POST /write"); n != 0 {
			t.Errorf("the site received %d POST /write through the guard, want 0", n)
		}
	})
	t.Run("off-site and redirecting navigations are refused", func(t *testing.T) {
		g := g.with(t)
		text, isErr := g.call("browser_navigate", map[string]any{"url": s.Offsite + "/direct"})
		if !isErr || !strings.Contains(text, `"status":"refused"`) {
			t.Errorf("off-site navigation: got %q, want refused", text)
		}
		g.call("browser_navigate", map[string]any{"url": s.URL + "/redirect"})
		if s.count("GET /redirect") == 0 {
			t.Errorf("the redirecting page was not asked for: the test proves nothing")
		}
		if n := s.count("offsite /landing") + s.count("offsite /direct"); n != 0 {
			t.Errorf("the off-site server received %d requests through the guard, want 0", n)
		}
	})
	t.Run("a ref from an older snapshot is refused", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/swap"})
		b := g.ref("button", "Show details")
		s.open()
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("GET /swapped") > 0 }) {
			t.Fatal("the page did not swap its button")
		}
		text, isErr := g.call("browser_click", map[string]any{"target": b, "element": "Show details"})
		if !isErr || !strings.Contains(text, "guard.ref") {
			t.Errorf("click on a swapped ref: got %q, want guard.ref", text)
		}
		text, isErr = g.call("browser_click", map[string]any{"target": "#b", "element": "b"})
		if !isErr || !strings.Contains(text, "guard.ref") {
			t.Errorf("click on a selector: got %q, want guard.ref", text)
		}
		// After a new snapshot the same button may be clicked: it is what the client saw.
		b = g.ref("button", "Delete everything")
		g.mustCall("browser_click", map[string]any{"target": b, "element": "Delete everything"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("GET /hit/other") > 0 }) {
			t.Errorf("a click on a ref of the latest snapshot did not happen")
		}
	})
	t.Run("keys and dialogs", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/search"})
		text, isErr := g.call("browser_press_key", map[string]any{"key": "Enter"})
		if !isErr || !strings.Contains(text, "guard.key") {
			t.Errorf("Enter: got %q, want guard.key", text)
		}
		g.mustCall("browser_press_key", map[string]any{"key": "Tab"})
		q := g.ref("textbox", "Search")
		text, isErr = g.call("browser_type", map[string]any{"target": q, "element": "Search", "text": "cats", "submit": true})
		if !isErr || !strings.Contains(text, "guard.submit") {
			t.Errorf("typing with submit: got %q, want guard.submit", text)
		}
		g.mustCall("browser_type", map[string]any{"target": q, "element": "Search", "text": "cats"})
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/dialog"})
		text = g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Ask"), "element": "Ask"})
		if !strings.Contains(text, "dismissed a confirm dialog") {
			t.Errorf("click that opens a confirm: got %q, want the guard to dismiss it", text)
		}
		g.mustCall("browser_snapshot", nil)
		if n := s.count("GET /hit/confirmed"); n != 0 {
			t.Errorf("the confirm was accepted (%d hits)", n)
		}
	})
	t.Run("audit", func(t *testing.T) {
		g.cs.Close()
		run, steps := g.auditRun(t)
		if run.Kind != audit.KindGuard {
			t.Errorf("run kind %q, want %q", run.Kind, audit.KindGuard)
		}
		var rules, proxyDenied []string
		for _, st := range steps {
			rules = append(rules, st.Rule)
			if st.Tool != "request" {
				t.Logf("step %d %s %s %s (%s): %v", st.N, st.Tool, st.Verdict, st.Rule, st.Reason, st.Duration)
			}
			if st.Layer == "proxy" && !st.Allowed() {
				proxyDenied = append(proxyDenied, st.Rule+" "+st.Origin+st.Path)
			}
		}
		for _, want := range []string{"guard.credential", "guard.withheld", "guard.ref", "guard.key", "guard.submit", "guard.allowed"} {
			if !slices.Contains(rules, want) {
				t.Errorf("no %s step in the audit; rules: %v", want, rules)
			}
		}
		if !slices.ContainsFunc(proxyDenied, func(s string) bool { return strings.HasPrefix(s, "method POST ") && strings.HasSuffix(s, "/write") }) {
			t.Errorf("no denied POST under the guard's steps; proxy denials: %v", proxyDenied)
		}
		raw, _ := os.ReadFile(g.db)
		if strings.Contains(string(raw), secret) || strings.Contains(g.stderr.String(), secret) {
			t.Errorf("the password reached the audit store or stderr")
		}
	})

	// The positive controls: the same Playwright MCP, unguarded, does each thing the guard refused.
	u := unguarded(t, s)
	t.Run("control", func(t *testing.T) {
		u := u.with(t)
		tools := u.tools()
		if !slices.Contains(tools, "browser_evaluate") || !slices.Contains(tools, "browser_run_code_unsafe") {
			t.Errorf("unguarded Playwright MCP does not list its script tools: %v", tools)
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/login"})
		u.mustCall("browser_type", map[string]any{"target": u.ref("textbox", "Password"), "element": "Password", "text": secret})
		u.mustCall("browser_snapshot", nil)
		if !u.saw(secret) {
			t.Errorf("unguarded: the typed password was not shown: the password check proves nothing")
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/framed"})
		if text := u.mustCall("browser_snapshot", nil); !strings.Contains(text, secret) {
			t.Errorf("unguarded: the framed password was not shown: the frame check proves nothing\n%s", text)
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/hidden-filled"})
		if text := u.mustCall("browser_snapshot", nil); !strings.Contains(text, secret) {
			t.Errorf("unguarded: the password hidden from the page's world was not shown: the isolated-world check proves nothing\n%s", text)
		}
		if text, _ := u.call("browser_evaluate", map[string]any{"function": "() => document.getElementById('pw').value"}); strings.Contains(text, secret) {
			t.Errorf("unguarded: the page's own world reads its password: the page does not hide it, the check proves nothing\n%s", text)
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/form"})
		u.mustCall("browser_click", map[string]any{"target": u.ref("button", "Save"), "element": "Save"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("POST /write") > 0 }) {
			t.Errorf("unguarded: the form did not post: the write check proves nothing")
		}
		u.call("browser_navigate", map[string]any{"url": s.URL + "/redirect"})
		if s.count("offsite /landing") == 0 {
			t.Errorf("unguarded: the redirect did not reach the off-site server: the redirect check proves nothing")
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/swap"})
		before := s.count("GET /swapped")
		b := u.ref("button", "Show details")
		s.open()
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("GET /swapped") > before }) {
			t.Fatal("unguarded: the page did not swap its button")
		}
		hits := s.count("GET /hit/other")
		u.mustCall("browser_click", map[string]any{"target": b, "element": "Show details"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("GET /hit/other") > hits }) {
			t.Errorf("unguarded: the old ref did not click the swapped button: the ref check proves nothing")
		}
	})
}

var listenRE = regexp.MustCompile(`at (http://\S+/mcp)`)

// TestGuardStreamableHTTP serves the guard over Streamable HTTP: the same tools, the same wall.
func TestGuardStreamableHTTP(t *testing.T) {
	s := startSite(t, "http")
	dir := t.TempDir()
	args := append([]string{"guard", "--policy", s.policy(t), "--db", filepath.Join(dir, "audit.db"), "--http", "127.0.0.1:0", "--", "node"}, upstreamArgs()...)
	cmd := exec.Command(binary, args...)
	stderr := &testutil.Buffer{}
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), "HOME="+dir, "BROWSER_AGENT_DB="), stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	var url string
	if !testutil.Eventually(2*time.Minute, func() bool {
		m := listenRE.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}) {
		t.Fatalf("the guard did not listen:\n%s", stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "guard-test-http", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v\n%s", url, err, stderr)
	}
	defer cs.Close()
	c := &client{t: t, cs: cs, stderr: stderr, mu: &sync.Mutex{}, seen: &strings.Builder{}}
	if tools := c.tools(); slices.Contains(tools, "browser_evaluate") || !slices.Contains(tools, "browser_click") {
		t.Errorf("tools over HTTP: %v", tools)
	}
	c.mustCall("browser_navigate", map[string]any{"url": s.URL + "/form"})
	c.call("browser_click", map[string]any{"target": c.ref("button", "Save"), "element": "Save"})
	c.call("browser_navigate", map[string]any{"url": s.URL + "/redirect"})
	if s.count("GET /redirect") == 0 {
		t.Errorf("the redirecting page was not asked for: the test proves nothing")
	}
	if n := s.count("POST /write") + s.count("offsite /landing"); n != 0 {
		t.Errorf("%d writes or off-site requests left through the guard over HTTP, want 0", n)
	}
}
