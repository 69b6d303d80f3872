package bench

import (
	"testing"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/policy"
)

const benchOrigin = "http://127.0.0.1:8081"

// decideCase is one request of the mix and the verdict the embedded demo-site policy gives it.
type decideCase struct {
	kind   string // read, write, offsite, trick
	method string
	url    string
	base   string
	allow  bool
}

// decideMix is a realistic mix for one lookup run and the attacks the policy must stop: mostly
// allowed reads (navigations and the subresource-free pages of the demo site), then writes,
// off-site and encoded tricks.
var decideMix = []decideCase{
	{"read", "GET", benchOrigin + "/", "", true},
	{"read", "GET", benchOrigin + "/search?q=SYN-0042", "", true},
	{"read", "GET", benchOrigin + "/records/SYN-0042", "", true},
	{"read", "GET", benchOrigin + "/sources/b/SYN-0042", "", true},
	{"read", "GET", "/records/SYN-0001", benchOrigin + "/search?q=SYN-0001", true},
	{"read", "HEAD", benchOrigin + "/records/SYN-0077#fields", "", true},
	{"read", "GET", benchOrigin + "/search?q=Crimson+Landing+Study", "", true},
	{"read", "GET", "../sources/b/SYN-0042", benchOrigin + "/records/SYN-0042", true},
	{"write", "POST", benchOrigin + "/records/SYN-0042/edit", "", false},
	{"write", "GET", benchOrigin + "/records/SYN-0042/delete?confirm=yes", "", false},
	{"write", "GET", benchOrigin + "/search?q=x&action=deleteAll", "", false},
	{"offsite", "GET", "https://example.com/", "", false},
	{"offsite", "GET", "//offsite.invalid/protocol-relative", benchOrigin + "/about", false},
	{"offsite", "GET", "http://127.0.0.1:8082/admin/state", "", false},
	{"trick", "GET", benchOrigin + "/records/SYN-0042/%2564elete", "", false},
	{"trick", "GET", "http://0x7f.1:8081/records/%2e%2e/SYN-0042/%65dit", "", false},
	{"trick", "GET", "http://user:pw@127.0.0.1:8081/", "", false},
	{"trick", "GET", "javascript:alert(1)", "", false},
}

func demoPolicy(tb testing.TB) *policy.Policy {
	tb.Helper()
	pol, err := policy.Parse(demosite.PolicyYAML(benchOrigin), "demo-site policy")
	if err != nil {
		tb.Fatal(err)
	}
	return pol
}

// TestDecideMix checks that every request of the benchmark's mix gets the verdict it is listed
// with, so that the benchmark measures the paths it claims to.
func TestDecideMix(t *testing.T) {
	pol := demoPolicy(t)
	for _, c := range decideMix {
		d, err := pol.Decide(policy.DecideArgs{Method: c.method, URL: c.url, Base: c.base})
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.url, err)
		}
		if d.Allowed() != c.allow {
			t.Errorf("%s %s (base %q): %v (%s, %s), want allow=%v", c.method, c.url, c.base, d.Verdict, d.Rule, d.Reason, c.allow)
		}
	}
}

// BenchmarkDecide times one Decide, averaged over the mix (one op = one request of the mix, taken
// in turn), and each kind of request alone.
//
//	go test ./bench -run '^$' -bench Decide -benchmem -count 10
func BenchmarkDecide(b *testing.B) {
	pol := demoPolicy(b)
	run := func(b *testing.B, cases []decideCase) {
		args := make([]policy.DecideArgs, len(cases))
		for i, c := range cases {
			args[i] = policy.DecideArgs{Method: c.method, URL: c.url, Base: c.base}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := pol.Decide(args[i%len(args)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("mix", func(b *testing.B) { run(b, decideMix) })
	for _, kind := range []string{"read", "write", "offsite", "trick"} {
		var cs []decideCase
		for _, c := range decideMix {
			if c.kind == kind {
				cs = append(cs, c)
			}
		}
		b.Run(kind, func(b *testing.B) { run(b, cs) })
	}
}

// BenchmarkParseURL times the WHATWG parse alone (policy.ParseURL, which Decide calls first) on
// the same mix: the floor under Decide that the policy package does not control.
func BenchmarkParseURL(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		c := decideMix[i%len(decideMix)]
		if _, err := policy.ParseURL(c.url, c.base); err != nil {
			b.Fatal(err)
		}
	}
}
