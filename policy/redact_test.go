package policy

import (
	"strings"
	"testing"
)

// TestRedactorKeepsOnlyWhatThePolicyOrTaskChose plants a secret in every part of a URL a page or a
// model could choose and checks that the Redactor keeps none of it, while the paths the policy and
// the task account for stay readable.
func TestRedactorKeepsOnlyWhatThePolicyOrTaskChose(t *testing.T) {
	p := loadDemo(t)
	const secret = "ZQXsecret4410"
	key := []byte("k1")
	r := p.Redactor(key, "SYN-0042")
	const site = "http://127.0.0.1:8081"
	kept := map[string]string{
		site + "/records/SYN-0042":                    site + "/records/SYN-0042",
		site + "/records/syn-0042":                    site + "/records/syn-0042",
		site + "/search?q=" + secret:                  site + "/search",
		site + "/records/SYN-0042#" + secret:          site + "/records/SYN-0042",
		site + "/":                                    site + "/",
		site + "/records/SYN-0042/delete?confirm=yes": site + "/records/SYN-0042/delete",
		"https://docs.example.org/":                   "https://docs.example.org/",
		"data:text/html," + secret:                    "data:",
		"zqxsecret4410:x":                             RedactedScheme + ":",
	}
	for in, want := range kept {
		if got := r.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	hashed := []string{
		site + "/records/" + secret,                                     // a route parameter that is not the record
		site + "/sources/b/" + secret,                                   // under a wildcard
		site + "/sources/SYN-0042/" + secret,                            // the record, then a chosen segment
		site + "/" + secret,                                             // no route at all
		site + "/records/records/records/records/x",                     // route literals spelled out at length
		"http://" + strings.ToLower(secret) + ".evil.example/" + secret, // a host the policy does not name
		"https://docs.example.org/guide/" + secret,
	}
	for _, in := range hashed {
		got := r.URL(in)
		if strings.Contains(strings.ToLower(got), strings.ToLower(secret)) || !strings.Contains(got, "hmac-") {
			t.Errorf("URL(%q) = %q, want the secret replaced by a length and a keyed hash", in, got)
		}
		if again := r.URL(in); again != got {
			t.Errorf("URL(%q) is not stable: %q then %q", in, got, again)
		}
		if other := p.Redactor([]byte("k2"), "SYN-0042").URL(in); other == got {
			t.Errorf("URL(%q) = %q under two keys: the hash is not keyed", in, got)
		}
	}
	if a, b := r.URL(site+"/records/a"), r.URL(site+"/records/b"); a == b {
		t.Errorf("two paths give one redaction %q", a)
	}
	// Without a record identifier, even the record's path is hashed.
	if got := p.Redactor(key, "").URL(site + "/records/SYN-0042"); !strings.Contains(got, "hmac-") {
		t.Errorf("no record id: URL = %q, want hashed", got)
	}
	// Rules quote a method and a scheme only when they are standard.
	for in, want := range map[string]string{
		"method POST":                 "method POST",
		"method " + secret:            "method OTHER",
		"scheme ws":                   "scheme ws",
		"scheme " + secret:            "scheme " + RedactedScheme,
		`write word "delete" in path`: `write word "delete" in path`,
	} {
		if got := r.Rule(in); got != want {
			t.Errorf("Rule(%q) = %q, want %q", in, got, want)
		}
	}
	// A page-chosen URL decided by the policy: the decision's own rule names no part of it.
	for _, u := range []string{site + "/records/" + secret + "/x", site + "/records/..%2F" + secret, site + "/search?q=x&" + secret + "=1"} {
		d, _ := p.Decide(DecideArgs{URL: u})
		if strings.Contains(d.Rule, secret) || strings.Contains(d.Reason, secret) {
			t.Errorf("Decide(%q) rule %q reason %q quotes the URL", u, d.Rule, d.Reason)
		}
	}
}
