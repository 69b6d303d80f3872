package policy

import (
	"strings"
	"testing"
)

// FuzzDecide checks the decision's invariants on arbitrary input: it never panics, it never
// returns an engine error, and an Allow always means a read route matched, the method was GET or
// HEAD, the scheme was http(s), there was no userinfo and no write word.
func FuzzDecide(f *testing.F) {
	seeds := []struct{ method, url, base string }{
		{"GET", "http://127.0.0.1:8081/records/SYN-0042", ""},
		{"GET", "http://127.0.0.1:8081/sources/%2e%2e/records/x/%64elete", ""},
		{"GET", `http:\\127.0.0.1:8081\records\1`, ""},
		{"GET", "http://evil.com\\@127.0.0.1:8081/", ""},
		{"GET", "http://0x7f.1:8081/", ""},
		{"GET", "http://2130706433:8081/x/deleteAll", ""},
		{"POST", "http://127.0.0.1:8081/search", ""},
		{"HEAD", "../../records/SYN-1?confirm=yes", "http://127.0.0.1:8081/sources/b/x"},
		{"GET", "//evil.com/", "http://127.0.0.1:8081/"},
		{"GET", "javascript:location='http://evil.com'", ""},
		{"GET", "http://[::ffff:127.0.0.1]:8081/", ""},
		{"GET", "http://xn--dcs-ldd.example.org/guide/x", ""},
		{"get", "https://docs.example.org./guide/%2564elete", ""},
		{"GET", "http://127.0.0.1:8081/search?q=%E2%80%AEetelpd", ""},
		{"GET", "http://127.0.0.1:8081/sear\tch?q=ok", ""},
		{"GET", "http://127.0.0.1:8081/records/..%2Fadmin", ""},
		{"GET", "http://127.0.0.1:8081/sources/..;/admin", ""},
		{"GET", "http://127.0.0.1:8081/sources/%25252564elete", ""},
		{"GET", "http://127.0.0.1:8081/search?q=SYN-1&page=2", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.url, s.base)
	}
	p := loadDemo(f)
	f.Fuzz(func(t *testing.T, method, raw, base string) {
		d, err := p.Decide(DecideArgs{Method: method, URL: raw, Base: base})
		if err != nil {
			t.Fatalf("Decide(%q, %q, %q): engine error %v", method, raw, base, err)
		}
		if !d.Allowed() {
			if d.Reason == "" {
				t.Fatalf("Decide(%q, %q, %q): deny without a reason", method, raw, base)
			}
			return
		}
		m := strings.ToUpper(strings.TrimSpace(method))
		if m != "" && m != "GET" && m != "HEAD" {
			t.Fatalf("Decide(%q, %q): allowed a %s", method, raw, m)
		}
		if d.Reason != ReasonAllowed || !strings.Contains(d.Rule, " read ") {
			t.Fatalf("Decide(%q, %q): allowed without a read rule: %+v", method, raw, d)
		}
		u, err := ParseURL(raw, base)
		if err != nil {
			t.Fatalf("Decide(%q, %q): allowed a URL that does not parse: %v", method, raw, err)
		}
		if u.Scheme() != "http" && u.Scheme() != "https" || u.HasUserinfo() {
			t.Fatalf("Decide(%q): allowed %s", raw, u)
		}
		if w, _ := p.findWriteWordSegs(u, splitPath(u.Path())); w != "" {
			t.Fatalf("Decide(%q): allowed a URL with write word %q", raw, w)
		}
		for _, seg := range splitPath(u.Path()) {
			if why := unsafeSegment(seg); why != "" {
				t.Fatalf("Decide(%q): allowed a URL whose path segment %q %s", raw, seg, why)
			}
		}
		// The canonical URL decides the same way when decided again (idempotence).
		again, _ := p.Decide(DecideArgs{Method: method, URL: d.URL})
		if !again.Allowed() || again.URL != d.URL {
			t.Fatalf("Decide(%q) allowed as %q, but deciding %q again gives %+v", raw, d.URL, d.URL, again)
		}
	})
}
