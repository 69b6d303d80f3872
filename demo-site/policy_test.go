package demosite

import (
	"context"
	"net/http"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// TestEmbeddedPolicyAllowsExactlyTheReadRoutes serves the site and checks the embedded policy
// against what the site really does: every read page is allowed and every write route is denied.
func TestEmbeddedPolicyAllowsExactlyTheReadRoutes(t *testing.T) {
	srv, err := Start(context.Background(), "127.0.0.1:0", "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := policy.Parse(PolicyYAML(srv.URL), "embedded")
	if err != nil {
		t.Fatalf("embedded policy for %s: %v", srv.URL, err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	reads := []string{"/", "/search?q=SYN-0042", "/records/SYN-0042", "/sources/b/SYN-0042", "/about", "/offsite", "/login", "/records/SYN-0013", "/login?next=/records/SYN-0013", "/search"}
	for _, path := range reads {
		d, err := p.Decide(policy.DecideArgs{URL: srv.URL + path})
		if err != nil || !d.Allowed() {
			t.Errorf("read %s: got %v %q, want allow", path, d.Verdict, d.Reason)
		}
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusFound {
			t.Errorf("GET %s: status %d", path, resp.StatusCode)
		}
	}
	writes := []struct{ method, path string }{
		{"POST", "/records/SYN-0042/delete"},
		{"POST", "/records/SYN-0042/edit"},
		{"GET", "/records/SYN-0042/delete?confirm=yes"},
		{"GET", "/records/SYN-0042/delete"},
		{"GET", "/records/SYN-0042/edit"},
		{"GET", "/go/3"},
		{"POST", "/login"},
		// What a model obeying page text tried: a state change under a read route's parameter,
		// a parameter no route names, a segment a server decodes into more segments.
		{"GET", "/records/SYN-0042?public=1"},
		{"GET", "/records/SYN-0042/close"},
		{"GET", "/search?q=SYN-0042&action=deleterecord"},
		{"GET", "/records/..%2Fadmin"},
		{"GET", "/sources/b/..;/admin"},
	}
	for _, w := range writes {
		d, err := p.Decide(policy.DecideArgs{Method: w.method, URL: srv.URL + w.path})
		if err != nil || d.Allowed() {
			t.Errorf("%s %s: got %v %q, want deny", w.method, w.path, d.Verdict, d.Reason)
		}
	}
	// The admin listener is never allowed.
	if d, _ := p.Decide(policy.DecideArgs{URL: srv.AdminURL + "/mutations"}); d.Allowed() {
		t.Errorf("admin %s allowed", srv.AdminURL)
	}
}

// TestEmbeddedPolicySignIn: the demo's policy names one sign-in write, POST /login, for serve's
// sign-in handoff (only under a person's lease: the callers ask DecideSignIn only then). Every
// other write, and /login with another method or on another origin, is not a sign-in write.
func TestEmbeddedPolicySignIn(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	p, err := policy.Parse(PolicyYAML(origin), "embedded")
	if err != nil {
		t.Fatal(err)
	}
	u := func(s string) *policy.URL {
		t.Helper()
		pu, err := policy.ParseURL(s, "")
		if err != nil {
			t.Fatal(err)
		}
		return pu
	}
	if d := p.DecideSignIn("POST", u(origin+"/login")); !d.Allowed() {
		t.Errorf("POST /login under a lease: %v %q, want allow", d.Verdict, d.Reason)
	}
	if secs, ok := p.SignInWait(u(origin + "/login")); !ok || secs != 180 {
		t.Errorf("SignInWait: %d %v, want 180 s", secs, ok)
	}
	for _, w := range []struct{ method, url string }{
		{"PUT", origin + "/login"},
		{"GET", origin + "/login"},
		{"POST", origin + "/login/"},
		{"POST", origin + "/records/SYN-0042/delete"},
		{"POST", origin + "/records/SYN-0042/edit"},
		{"POST", origin + "/search"},
		{"POST", "http://127.0.0.1:8082/login"},
		{"POST", "https://127.0.0.1:8081/login"},
	} {
		if d := p.DecideSignIn(w.method, u(w.url)); d.Allowed() {
			t.Errorf("%s %s as a sign-in write: allowed, want deny", w.method, w.url)
		}
	}
}
