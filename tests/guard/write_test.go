package guard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var (
	approvalsRE = regexp.MustCompile(`approved or refused at (http://\S+/)`)
	holdRE      = regexp.MustCompile(`name="id" value="([0-9]+)"><input type="hidden" name="digest" value="([0-9a-f]{64})"`)
)

// guardedWrite starts the guard in write mode in front of Playwright MCP.
func guardedWrite(t *testing.T, s *site) (*client, string) {
	dir := t.TempDir()
	pol := s.policy(t)
	f, err := os.OpenFile(pol, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "guard:\n  mode: write\n  approval:\n    listen: 127.0.0.1:0\n    timeout: 2m\n  payment_origins: [%s]\n", s.Frame)
	f.Close()
	args := append([]string{"guard", "--policy", pol, "--db", filepath.Join(dir, "audit.db"), "--", "node"}, upstreamArgs()...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "BROWSER_AGENT_DB=", "BROWSER_AGENT_UPSTREAM_ROOTS="+s.roots)
	c := connect(t, cmd, dir)
	c.db = filepath.Join(dir, "audit.db")
	m := approvalsRE.FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("the guard did not name its approval page:\n%s", c.stderr)
	}
	return c, m[1]
}

// heldOn is the one write held on the approval page: its id and digest.
func heldOn(t *testing.T, page string) (id, digest string) {
	t.Helper()
	var m []string
	testutil.Eventually(10*time.Second, func() bool {
		resp, err := http.Get(page)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m = holdRE.FindStringSubmatch(string(b))
		return m != nil
	})
	if m == nil {
		t.Fatalf("nothing held on the approval page")
	}
	return m[1], m[2]
}

func decide(t *testing.T, page, id, digest, verdict string) int {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(page+"decide", url.Values{"id": {id}, "digest": {digest}, "verdict": {verdict}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestGuardWriteHTTP(t *testing.T)  { testGuardWrite(t, "http") }
func TestGuardWriteHTTPS(t *testing.T) { testGuardWrite(t, "https") }

// testGuardWrite: in write mode a form's POST is held; unapproved, nothing reaches the site;
// approved by its digest, exactly one POST does; an answer naming another digest sends nothing.
// The positive control: the same click through Playwright MCP unguarded posts at once.
func testGuardWrite(t *testing.T, scheme string) {
	s := startSite(t, scheme)
	g, page := guardedWrite(t, s)
	search := func(dest string) string {
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/book"})
		g.mustCall("browser_type", map[string]any{"target": g.ref("textbox", "Destination"), "element": "Destination", "text": dest})
		text, _ := g.call("browser_click", map[string]any{"target": g.ref("button", "Search trips"), "element": "Search trips"})
		return text
	}
	t.Run("refused: nothing reaches the site", func(t *testing.T) {
		g := g.with(t)
		done := make(chan string, 1)
		go func() { done <- search("Lisbon") }()
		id, digest := heldOn(t, page)
		if n := s.count("POST /book-search"); n != 0 {
			t.Errorf("%d POSTs reached the site while held, want 0", n)
		}
		if st := decide(t, page, id, strings.Repeat("0", 64), "approve"); st != http.StatusConflict {
			t.Errorf("an approval naming another digest: status %d, want 409", st)
		}
		if st := decide(t, page, id, digest, "refuse"); st != http.StatusSeeOther {
			t.Errorf("refusal: status %d, want 303", st)
		}
		text := <-done
		if !strings.Contains(text, "held for a person") {
			t.Errorf("the click's result does not say the write was held:\n%s", text)
		}
		g.call("browser_snapshot", nil)
		if n := s.count("POST /book-search"); n != 0 {
			t.Errorf("%d POSTs reached the site after a refusal, want 0", n)
		}
	})
	t.Run("approved: exactly one reaches the site", func(t *testing.T) {
		done := make(chan string, 1)
		go func() { done <- search("Porto") }()
		id, digest := heldOn(t, page)
		if st := decide(t, page, id, digest, "approve"); st != http.StatusSeeOther {
			t.Errorf("approval: status %d, want 303", st)
		}
		<-done
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("POST /book-search") > 0 }) {
			t.Fatalf("the approved POST did not reach the site")
		}
		g.with(t).call("browser_snapshot", nil)
		if n := s.count("POST /book-search"); n != 1 {
			t.Errorf("%d POSTs reached the site, want exactly 1", n)
		}
	})
	t.Run("a card is typed by no agent and sent by no approval", func(t *testing.T) {
		g := g.with(t)
		before := s.count("POST /book-search")
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/wallet"})
		text, isErr := g.call("browser_type", map[string]any{"target": g.ref("textbox", "Card number"), "element": "Card number", "text": "4111111111111111"})
		if !isErr || !strings.Contains(text, "guard.credential") {
			t.Errorf("typing a card number: got %q, want a guard.credential refusal", text)
		}
		// A control named with a money word, on a page that shows a card field: refused before
		// it is pressed (a write carrying a card is refused by its effect: booking_test.go).
		text, isErr = g.call("browser_click", map[string]any{"target": g.ref("button", "Pay now"), "element": "Pay now"})
		if !isErr || !strings.Contains(text, "guard.money") {
			t.Errorf("a click on Pay now: got %q, want a guard.money refusal", text)
		}
		g.call("browser_snapshot", nil)
		if n := s.count("POST /book-search") - before; n != 0 {
			t.Errorf("%d POSTs carrying a card reached the site, want 0", n)
		}
	})
	t.Run("control", func(t *testing.T) {
		u := unguarded(t, s).with(t)
		before := s.count("POST /book-search")
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/book"})
		u.mustCall("browser_click", map[string]any{"target": u.ref("button", "Search trips"), "element": "Search trips"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("POST /book-search") > before }) {
			t.Errorf("unguarded: the form did not post: the hold proves nothing")
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/wallet"})
		u.mustCall("browser_type", map[string]any{"target": u.ref("textbox", "Card number"), "element": "Card number", "text": "4111111111111111"})
		before = s.count("POST /book-search")
		u.mustCall("browser_click", map[string]any{"target": u.ref("button", "Pay now"), "element": "Pay now"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("POST /book-search") > before }) {
			t.Errorf("unguarded: the card form did not post: the card checks prove nothing")
		}
	})
}
