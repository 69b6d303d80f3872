package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// signInUpstream records the bodies of the writes that reach it.
type signInUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	writes []string // "METHOD path body"
}

func newSignInUpstream(t *testing.T, tlsServer bool) *signInUpstream {
	up := &signInUpstream{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			b, _ := io.ReadAll(r.Body)
			up.mu.Lock()
			up.writes = append(up.writes, r.Method+" "+r.URL.Path+" "+string(b))
			up.mu.Unlock()
		}
		io.WriteString(w, "ok "+r.URL.Path)
	})
	if tlsServer {
		up.Server = httptest.NewTLSServer(h)
	} else {
		up.Server = httptest.NewServer(h)
	}
	t.Cleanup(up.Close)
	return up
}

// twoSitePolicy is the policy giving site (the lines of a site's entry after its origin) to both
// upstreams, the plain and the TLS one.
func twoSitePolicy(t *testing.T, name, site string, up, tlsUp *signInUpstream) *policy.Policy {
	t.Helper()
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    %s\n  - origin: %s\n    %s\n", up.URL, site, tlsUp.URL, site)
	pol, err := policy.Parse([]byte(src), name)
	if err != nil {
		t.Fatalf("%s\n%v", src, err)
	}
	return pol
}

// sendForm sends body as a form with method to url through c, and returns the status and the
// proxy's refusal reason (HeaderError).
func sendForm(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(HeaderError)
}

// refusal is a write the proxy must refuse, and the reason it must give.
type refusal struct{ method, path, reason string }

// expectRefused sends each write in ws with body through do and fails the test unless each is
// refused (403) for its reason; when says in which state.
func expectRefused(t *testing.T, when string, do func(method, path, body string) (int, string), body string, ws []refusal) {
	t.Helper()
	for _, w := range ws {
		if st, why := do(w.method, w.path, body); st != 403 || why != w.reason {
			t.Errorf("%s %s %s: %d %q, want 403 %q", w.method, w.path, when, st, why, w.reason)
		}
	}
}

func (up *signInUpstream) count() int {
	up.mu.Lock()
	defer up.mu.Unlock()
	return len(up.writes)
}

// TestSignInLease: a POST to a sign-in route the policy names is forwarded, with its body, only
// while the lease is set; before and after it is a write like any other. Every other write stays
// denied under the lease. Over http and inside an intercepted https tunnel.
func TestSignInLease(t *testing.T) {
	up := newSignInUpstream(t, false)
	tlsUp := newSignInUpstream(t, true)
	pol := twoSitePolicy(t, "signin.yaml", "read: [/, /login, \"/records/{id}\"]\n    signin: {routes: [/login], methods: [POST]}", up, tlsUp)
	rec := &recorder{}
	p := startProxy(t, pol, append(rec.options(), WithUpstreamRoots(tlsUp.Certificate()))...)
	httpC := authClient(p)
	httpsC := &http.Client{Transport: mitmTransport(p), CheckRedirect: httpC.CheckRedirect}

	for _, tc := range []struct {
		name string
		c    *http.Client
		up   *signInUpstream
	}{{"http", httpC, up}, {"https", httpsC, tlsUp}} {
		t.Run(tc.name, func(t *testing.T) {
			do := func(method, path, body string) (int, string) {
				t.Helper()
				return sendForm(t, tc.c, method, tc.up.URL+path, body)
			}
			const form = "user=demo&password=hunter2"
			// Before the lease: a write like any other.
			if st, why := do("POST", "/login", form); st != 403 || why != policy.ReasonWriteMethod {
				t.Errorf("POST /login before the lease: %d %q, want 403 %q", st, why, policy.ReasonWriteMethod)
			}
			p.SetSignInLease(true)
			// Positive control: the sign-in route, with its body.
			if st, why := do("POST", "/login", form); st != 200 || why != "" {
				t.Errorf("POST /login under the lease: %d %q, want 200", st, why)
			}
			if n := tc.up.count(); n != 1 || tc.up.writes[0] != "POST /login "+form {
				t.Errorf("upstream writes %q, want exactly the sign-in POST with its body", tc.up.writes)
			}
			// Under the lease every other write is still denied.
			expectRefused(t, "under the lease", do, form, []refusal{
				{"POST", "/records/1", policy.ReasonNoRule},
				{"POST", "/login/", policy.ReasonNoRule},
				{"POST", "/login?next=delete", policy.ReasonWriteWord},
				{"PUT", "/login", policy.ReasonWriteMethod},
				{"DELETE", "/login", policy.ReasonWriteMethod},
				{"POST", "/", policy.ReasonNoRule},
			})
			// A GET still may not carry a body under the lease.
			if st, why := do("GET", "/records/1", "x=1"); st != 403 || why != ReasonBody {
				t.Errorf("GET with a body under the lease: %d %q, want 403 %q", st, why, ReasonBody)
			}
			p.SetSignInLease(false)
			// After the lease: denied again.
			if st, why := do("POST", "/login", form); st != 403 || why != policy.ReasonWriteMethod {
				t.Errorf("POST /login after the lease: %d %q, want 403 %q", st, why, policy.ReasonWriteMethod)
			}
			if n := tc.up.count(); n != 1 {
				t.Errorf("%d writes reached the upstream, want 1 (the one under the lease)", n)
			}
		})
	}
	// The form body never reaches the proxy's log.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.logs {
		if strings.Contains(l, "hunter2") {
			t.Errorf("proxy log holds the password: %s", l)
		}
	}
}
