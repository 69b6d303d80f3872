package policy

import (
	"path/filepath"
	"testing"
)

const signInPolicy = `version: 1
sites:
  - origin: http://127.0.0.1:8081
    read: [/, /login, "/records/{id}"]
    signin:
      routes: [/login]
      methods: [POST]
      wait_seconds: 60
  - origin: https://127.0.0.1:8443
    read: [/, /login]
    signin:
      routes: [/login]
      methods: [POST]
  - origin: http://127.0.0.1:9090
    read: [/, /login]
`

// TestSignInOnlyThroughDecideSignIn: a sign-in POST is a write to DecideURL always; DecideSignIn,
// which callers ask only under a lease, allows exactly the named route, method and origin.
func TestSignInOnlyThroughDecideSignIn(t *testing.T) {
	p := mustParse(t, signInPolicy)
	cases := []struct {
		method, url string
		allow       bool
	}{
		// positive controls, http and https
		{"POST", "http://127.0.0.1:8081/login", true},
		{"post", "http://127.0.0.1:8081/login", true},
		{"POST", "http://127.0.0.1:8081/login?next=/records/1", true},
		{"POST", "https://127.0.0.1:8443/login", true},
		// attacker variations
		{"PUT", "http://127.0.0.1:8081/login", false},
		{"DELETE", "http://127.0.0.1:8081/login", false},
		{"GET", "http://127.0.0.1:8081/login", false},
		{"POST", "http://127.0.0.1:8081/login/", false},
		{"POST", "http://127.0.0.1:8081/login/x", false},
		{"POST", "http://127.0.0.1:8081/Login", false},
		{"POST", "http://127.0.0.1:8081/records/1", false},
		{"POST", "http://127.0.0.1:8081/", false},
		{"POST", "http://127.0.0.1:8082/login", false},
		{"POST", "https://127.0.0.1:8081/login", false},
		{"POST", "http://localhost:8081/login", false},
		{"POST", "http://u:p@127.0.0.1:8081/login", false},
		{"POST", "http://127.0.0.1:8081/login?then=delete", false},
		{"POST", "http://127.0.0.1:8081/x/../login/..%2fdelete", false},
		{"POST", "http://127.0.0.1:8081/login;x=1", false},
		{"POST", "http://127.0.0.1:8081/login%2f", false},
		{"POST", "http://127.0.0.1:9090/login", false}, // a site that names no sign-in route
	}
	for _, c := range cases {
		u, err := ParseURL(c.url, "")
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if d := p.DecideURL(c.method, u); d.Allowed() && c.method != "GET" {
			t.Errorf("DecideURL(%s %s) allowed a write: %+v", c.method, c.url, d)
		}
		d := p.DecideSignIn(c.method, u)
		if d.Allowed() != c.allow {
			t.Errorf("DecideSignIn(%s %s) = %+v, want allowed=%v", c.method, c.url, d, c.allow)
		}
		if d.Allowed() && d.Reason != ReasonSignIn {
			t.Errorf("DecideSignIn(%s %s) reason %q", c.method, c.url, d.Reason)
		}
	}
	u, _ := ParseURL("http://127.0.0.1:8081/records/1", "")
	if w, ok := p.SignInWait(u); !ok || w != 60 {
		t.Errorf("SignInWait(8081) = %d, %v; want 60, true", w, ok)
	}
	u, _ = ParseURL("https://127.0.0.1:8443/", "")
	if w, ok := p.SignInWait(u); !ok || w != DefaultSignInWait {
		t.Errorf("SignInWait(8443) = %d, %v; want %d, true", w, ok, DefaultSignInWait)
	}
	u, _ = ParseURL("http://127.0.0.1:9090/", "")
	if _, ok := p.SignInWait(u); ok {
		t.Errorf("SignInWait(9090): ok for a site without signin")
	}
	if got := p.Sites()[0].SignIn; len(got) != 1 || got[0] != "/login" {
		t.Errorf("Sites()[0].SignIn = %v", got)
	}
}

func TestLoadRejectsBadSignIn(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad_signin_wildcard.yaml", `testdata/bad_signin_wildcard.yaml:6: sites[0].signin.routes[0]: sign-in route "/login/*" must be an exact path, with no *, {parameter} or query`},
		{"bad_signin_method.yaml", `testdata/bad_signin_method.yaml:7: sites[0].signin.methods[0]: method "DELETE": only POST may be named (reads are GET, under read)`},
		{"bad_signin_no_methods.yaml", `testdata/bad_signin_no_methods.yaml:3: sites[0].signin.methods: at least one method is required, e.g. [POST]`},
		{"bad_signin_no_routes.yaml", `testdata/bad_signin_no_routes.yaml:3: sites[0].signin.routes: at least one sign-in route is required`},
		{"bad_signin_write_word.yaml", `testdata/bad_signin_write_word.yaml:6: sites[0].signin.routes[0]: sign-in route "/account/delete" holds the write word "delete" and would always be denied`},
		{"bad_signin_wait_range.yaml", `testdata/bad_signin_wait_range.yaml:8: sites[0].signin.wait_seconds: 5 is out of range 10..900`},
		{"bad_signin_unknown_key.yaml", `testdata/bad_signin_unknown_key.yaml:8: form: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", tt.file))
			if err == nil || p != nil {
				t.Fatalf("Load(%s): got %v, %v; want error %q", tt.file, p, err, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Load(%s):\n\tgot  %s\n\twant %s", tt.file, err, tt.want)
			}
		})
	}
}
