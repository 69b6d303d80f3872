package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// signInSite is a site with a sign-in form (/login), an account page shown only with its session
// cookie, and a page whose script tries to write and navigate on its own.
type signInSite struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []string // "path body" of every write that arrived
	logins int
}

const signInPassword = "pw-hunter2-7781"

func newSignInSite(t *testing.T) *signInSite {
	st := &signInSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><title>Sign in</title></head><body><form method="post" action="/login">
<input name="user" id="user"><input type="password" name="password" id="password"><button id="go">Sign in</button></form>
<a id="elsewhere" href="/public">elsewhere</a></body></html>`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var form url.Values
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			b, _ := io.ReadAll(r.Body)
			form, _ = url.ParseQuery(string(b))
			st.mu.Lock()
			st.posts = append(st.posts, r.URL.Path+" "+string(b))
			st.mu.Unlock()
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/login":
			if form.Get("user") == "demo" && form.Get("password") == signInPassword && r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
				st.mu.Lock()
				st.logins++
				st.mu.Unlock()
				http.SetCookie(w, &http.Cookie{Name: "sid", Value: "SESSION-COOKIE-9931", Path: "/"})
				http.Redirect(w, r, "/account", http.StatusSeeOther)
				return
			}
			http.Error(w, "bad credential", http.StatusForbidden)
		case r.URL.Path == "/account":
			if c, err := r.Cookie("sid"); err == nil && c.Value == "SESSION-COOKIE-9931" {
				fmt.Fprint(w, `<html><head><title>Account</title></head><body><p>ACCOUNT-RECORD balance 42</p></body></html>`)
				return
			}
			http.Redirect(w, r, "/login", http.StatusFound)
		case r.URL.Path == "/selfwrite":
			fmt.Fprint(w, `<html><body><p>self</p><script>
setInterval(() => { fetch('/account', {method: 'POST', body: 'x=1'}).catch(() => {});
  fetch('/login', {method: 'PUT', body: 'y=1'}).catch(() => {}); }, 100);
</script></body></html>`)
		default:
			fmt.Fprintf(w, "<html><body><p>page %s</p></body></html>", r.URL.Path)
		}
	})
	st.Server = httptest.NewServer(mux)
	t.Cleanup(st.Close)
	return st
}

func (st *signInSite) writes() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]string(nil), st.posts...)
}

// TestSignInLease: the bridge lets the page submit its sign-in form only while the session's lease
// is held; the session cookie stays in the bridge's jar, so the agent's next Open is signed in.
// Before and after the lease the same submission is a write and never leaves; under the lease
// every other write and navigation the page makes is still denied.
func TestSignInLease(t *testing.T) {
	t.Parallel()
	site := newSignInSite(t)
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/login, /account, /public, /selfwrite]\n    signin: {routes: [/login], methods: [POST]}\n", site.URL)
	pol, err := policy.Parse([]byte(src), "signin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := testRT.Launch(ctx, pol)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	if _, err := s.Open(ctxT(t), site.URL+"/login"); !errors.Is(err, ErrCredentialRequired) {
		t.Fatalf("Open /login: %v, want ErrCredentialRequired", err)
	}
	submit := func() {
		t.Helper()
		if err := s.page.Locator("#user").Fill("demo"); err != nil {
			t.Fatalf("fill user: %v", err)
		}
		if err := s.page.Locator("#password").Fill(signInPassword); err != nil {
			t.Fatalf("fill password: %v", err)
		}
		_ = s.page.Locator("#password").Press("Enter")
	}

	// Before the lease: the form's POST is a write, denied in the browser.
	submit()
	if !testutil.Eventually(10*time.Second, func() bool { return countDenied(s, "POST", "/login") >= 1 }) {
		t.Fatalf("POST /login before the lease was not denied; decisions: %+v", s.Decisions())
	}
	if w := site.writes(); len(w) != 0 {
		t.Fatalf("writes reached the site before the lease: %q", w)
	}
	for _, sel := range []string{"#user", "#password"} {
		if err := s.page.Locator(sel).Fill(""); err != nil {
			t.Fatal(err)
		}
	}

	// Under the lease: the same submission is sent, the redirect is followed as a GET.
	if err := s.TakeoverInput(ctxT(t), Input{Kind: "text", Text: "x"}); !errors.Is(err, ErrNoLease) {
		t.Errorf("TakeoverInput without a lease: %v, want ErrNoLease", err)
	}
	if _, err := s.TakeoverScreenshot(ctxT(t)); !errors.Is(err, ErrNoLease) {
		t.Errorf("TakeoverScreenshot without a lease: %v, want ErrNoLease", err)
	}
	s.SetSignInLease(true)
	if err := s.page.Locator("#password").WaitFor(); err != nil {
		t.Fatalf("sign-in form: %v", err)
	}
	if png, err := s.TakeoverScreenshot(ctxT(t)); err != nil || len(png) < 100 {
		t.Errorf("TakeoverScreenshot under the lease: %d bytes, %v", len(png), err)
	}
	// The person's input, as the live view sends it: a click at a point of the frame, text, keys.
	clickOn := func(sel string) {
		t.Helper()
		box, err := s.page.Locator(sel).BoundingBox()
		vp := s.page.ViewportSize()
		if err != nil || box == nil || vp == nil {
			t.Fatalf("box of %s: %v", sel, err)
		}
		in := Input{Kind: "click", X: (box.X + box.Width/2) / float64(vp.Width), Y: (box.Y + box.Height/2) / float64(vp.Height)}
		if err := s.TakeoverInput(ctxT(t), in); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	for _, bad := range []Input{{Kind: "click", X: 2}, {Kind: "key", Key: "F5"}, {Kind: "key", Key: "Control+r"},
		{Kind: "text", Text: "a\nb"}, {Kind: "script"}, {Kind: "text", Text: strings.Repeat("a", MaxTakeoverText+1)}} {
		if err := s.TakeoverInput(ctxT(t), bad); err == nil {
			t.Errorf("TakeoverInput(%+v) accepted", bad)
		}
	}
	clickOn("#user")
	if err := s.TakeoverInput(ctxT(t), Input{Kind: "text", Text: "demo"}); err != nil {
		t.Fatal(err)
	}
	clickOn("#password")
	if err := s.TakeoverInput(ctxT(t), Input{Kind: "text", Text: signInPassword}); err != nil {
		t.Fatal(err)
	}
	if err := s.TakeoverInput(ctxT(t), Input{Kind: "key", Key: "Enter"}); err != nil {
		t.Fatal(err)
	}
	if !testutil.Eventually(15*time.Second, func() bool {
		site.mu.Lock()
		defer site.mu.Unlock()
		return site.logins == 1
	}) {
		t.Fatalf("sign-in under the lease did not reach the site: writes %q, decisions %+v", site.writes(), s.Decisions())
	}
	// The site counts the login when the POST arrives; the bridge counts the write, and follows
	// the 303, once the site has answered: wait for both.
	hops := func() (n int) {
		for _, d := range s.Decisions() {
			if d.Hop > 0 && strings.HasSuffix(d.URL(), "/account") {
				n++
			}
		}
		return n
	}
	testutil.Eventually(15*time.Second, func() bool { return s.SignInWrites() >= 1 && hops() > 0 })
	if n := s.SignInWrites(); n != 1 {
		t.Errorf("SignInWrites = %d, want 1", n)
	}
	// The 303 after the sign-in POST is followed, and recorded, as a GET.
	for _, d := range s.Decisions() {
		if d.Hop > 0 && strings.HasSuffix(d.URL(), "/account") && d.Method != http.MethodGet {
			t.Errorf("redirect hop to /account recorded as %s, want GET: %+v", d.Method, d)
		}
	}
	if hops() == 0 {
		t.Errorf("no redirect hop to /account recorded; decisions %+v", s.Decisions())
	}
	// The page may write and navigate by itself during the lease: still held to the policy.
	// (Once the submission's answer has committed: until then the document may still change.)
	if !testutil.Eventually(10*time.Second, func() bool {
		_, err := s.page.Evaluate(`() => { fetch('/account', {method: 'POST', body: 'x=1'}).catch(() => {});
		fetch('/login', {method: 'PUT', body: 'y=1'}).catch(() => {}); location.href = '/public'; }`)
		return err == nil
	}) {
		t.Fatalf("the page's script never ran")
	}
	if !testutil.Eventually(10*time.Second, func() bool {
		return countDenied(s, "POST", "/account") >= 1 && countDenied(s, "PUT", "/login") >= 1 && countDenied(s, "GET", "/public") >= 1
	}) {
		t.Errorf("writes/navigation by the page under the lease were not all denied; decisions %+v", s.Decisions())
	}
	s.SetSignInLease(false)

	// The agent continues in the same session: signed in, the cookie never left the bridge's jar.
	p, err := s.Open(ctxT(t), site.URL+"/account")
	if err != nil || !strings.Contains(p.Text, "ACCOUNT-RECORD") {
		t.Fatalf("Open /account after the sign-in: %q, %v; want the signed-in page", p.Text, err)
	}
	if cookies, err := s.bctx.Cookies(); err != nil || len(cookies) != 0 {
		t.Errorf("browser cookies %+v (%v), want none: the session cookie stays in the bridge", cookies, err)
	}

	// After the lease: a submission is a write again.
	before := countDenied(s, "POST", "/login")
	if _, err := s.Open(ctxT(t), site.URL+"/login"); !errors.Is(err, ErrCredentialRequired) {
		t.Fatalf("Open /login again: %v", err)
	}
	submit()
	if !testutil.Eventually(10*time.Second, func() bool { return countDenied(s, "POST", "/login") > before }) {
		t.Fatalf("POST /login after the lease was not denied")
	}
	if w := site.writes(); len(w) != 1 || !strings.HasPrefix(w[0], "/login ") {
		t.Errorf("writes at the site %q, want exactly the one sign-in under the lease", w)
	}
	for _, d := range s.Decisions() {
		if strings.Contains(fmt.Sprint(d), signInPassword) {
			t.Errorf("a decision holds the password: %+v", d)
		}
	}
}

func countDenied(s *Session, method, path string) int {
	n := 0
	for _, d := range s.Decisions() {
		if d.Method == method && strings.HasSuffix(d.URL(), path) && d.Verdict != policy.Allow && d.Reason != "" {
			n++
		}
	}
	return n
}
