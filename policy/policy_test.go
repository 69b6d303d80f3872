package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func loadDemo(t testing.TB) *Policy {
	t.Helper()
	p, err := Load("testdata/demo.yaml")
	if err != nil {
		t.Fatalf("Load(testdata/demo.yaml): %v", err)
	}
	return p
}

func TestDecide(t *testing.T) {
	p := loadDemo(t)
	const site = "http://127.0.0.1:8081"
	tests := []struct {
		name   string
		method string
		url    string
		base   string
		want   Verdict
		reason string
		rule   string
		// canonical, when set, is the decision's URL.
		canonical string
	}{
		// Allowed read routes.
		{name: "allow root", url: site + "/", want: Allow, reason: ReasonAllowed, rule: site + " read /"},
		{name: "allow root without slash", url: site, want: Allow, reason: ReasonAllowed, rule: site + " read /"},
		{name: "allow record", url: site + "/records/SYN-0042", want: Allow, reason: ReasonAllowed, rule: site + " read /records/{id}"},
		{name: "allow head", method: "HEAD", url: site + "/records/SYN-0042", want: Allow, reason: ReasonAllowed},
		{name: "allow lower case get", method: "get", url: site + "/", want: Allow, reason: ReasonAllowed},
		{name: "allow search with query", url: site + "/search?q=SYN-0042", want: Allow, reason: ReasonAllowed, rule: site + " read /search?q={query}"},
		{name: "allow rest of path under star", url: site + "/sources/b/SYN-0042", want: Allow, reason: ReasonAllowed, rule: site + " read /sources/*"},
		{name: "allow star with empty rest", url: site + "/sources/", want: Allow, reason: ReasonAllowed},
		{name: "allow fragment dropped", url: site + "/records/SYN-1#top", want: Allow, reason: ReasonAllowed},
		{name: "allow address is not add", url: site + "/search?q=address", want: Allow, reason: ReasonAllowed},
		{name: "allow news is not new", url: site + "/search?q=news", want: Allow, reason: ReasonAllowed},
		{name: "allow https default port implicit", url: "https://docs.example.org/guide/intro", want: Allow, reason: ReasonAllowed},
		{name: "allow https explicit default port", url: "https://docs.example.org:443/guide/intro", want: Allow, reason: ReasonAllowed},
		{name: "allow upper case host", url: "https://DOCS.Example.ORG/guide/intro", want: Allow, reason: ReasonAllowed},
		{name: "allow trailing dot host", url: "https://docs.example.org./guide/intro", want: Allow, reason: ReasonAllowed},
		{name: "allow decimal ipv4 of the allowed host", url: "http://2130706433:8081/", want: Allow, reason: ReasonAllowed},
		{name: "allow relative against base", url: "../records/SYN-7", base: site + "/sources/b", want: Allow, reason: ReasonAllowed},
		{name: "allow tab and newline stripped", url: "http://127.0.0.1:8081/rec\tords/\nSYN-1", want: Allow, reason: ReasonAllowed},
		{name: "allow backslashes as slashes", url: `http:\\127.0.0.1:8081\records\SYN-1`, want: Allow, reason: ReasonAllowed},

		// Writes.
		{name: "deny post", method: "POST", url: site + "/search", reason: ReasonWriteMethod, rule: "method POST"},
		{name: "deny put", method: "PUT", url: site + "/records/SYN-1", reason: ReasonWriteMethod},
		{name: "deny delete method", method: "DELETE", url: site + "/records/SYN-1", reason: ReasonWriteMethod},
		{name: "deny options", method: "OPTIONS", url: site + "/", reason: ReasonWriteMethod},
		{name: "deny delete route", url: site + "/records/SYN-1/delete", reason: ReasonWriteWord, rule: `write word "delete" in path`},
		{name: "deny delete route under star", url: site + "/sources/b/delete", reason: ReasonWriteWord},
		{name: "deny camel case write", url: site + "/sources/deleteAll", reason: ReasonWriteWord, rule: `write word "delete" in path`},
		{name: "deny snake case write", url: site + "/sources/bulk_remove", reason: ReasonWriteWord, rule: `write word "remove" in path`},
		{name: "deny percent encoded write word", url: site + "/sources/%64elete", reason: ReasonWriteWord},
		{name: "deny double percent encoded write word", url: site + "/sources/%2564elete", reason: ReasonWriteWord},
		{name: "deny encoded slash write", url: site + "/records/SYN-1%2Fdelete", reason: ReasonWriteWord},
		{name: "deny write in query value", url: site + "/search?action=remove", reason: ReasonWriteWord, rule: `write word "remove" in query value`},
		{name: "deny write in query name", url: site + "/search?delete=1", reason: ReasonWriteWord, rule: `write word "delete" in query name`},
		{name: "deny confirm query", url: site + "/records/SYN-1?confirm=yes", reason: ReasonWriteWord},
		// The search query is free text by definition (issue 24): a search for words that name a
		// write is a read. An action parameter smuggled into it is not.
		{name: "allow search for a write word", url: site + "/search?q=please+delete+it", want: Allow, reason: ReasonAllowed},
		{name: "deny action parameter smuggled into a search", url: site + "/search?q=x%26action%3Ddelete", reason: ReasonWriteWord, rule: `write word "delete" in query value: ?q={query} of /search?q={query} is text`},
		{name: "deny action parameter smuggled, encoded twice", url: site + "/search?q=x%2526op%253Dpurgeall", reason: ReasonWriteWord},
		{name: "deny logout", url: site + "/sources/logout", reason: ReasonWriteWord},
		{name: "deny configured extra write word", url: site + "/sources/yeet", reason: ReasonWriteWord, rule: `write word "yeet" in path`},
		{name: "deny encoded dot segments reaching a write route", url: site + "/sources/%2e%2e/records/SYN-1/%64elete", reason: ReasonWriteWord},

		// Write stems: a write word inside or at the start of a word, in the parts of the URL the
		// policy did not write itself; a part still encoded after four decodings.
		{name: "deny deleteall", url: site + "/sources/deleteall", reason: ReasonWriteWord, rule: `write word "delete" in path`},
		{name: "allow deleterecord searched for", url: site + "/search?q=deleterecord", want: Allow, reason: ReasonAllowed},
		{name: "allow removed searched for", url: site + "/search?q=removed", want: Allow, reason: ReasonAllowed},
		{name: "deny deleteall in an identifier", url: "https://docs.example.org/guide/deleteall", reason: ReasonWriteWord, rule: `write word "delete" in path segment 2: {page} of /guide/{page} is an identifier`},
		{name: "deny removed in an identifier", url: "https://docs.example.org/guide/removed", reason: ReasonWriteWord},
		{name: "deny purgeall", url: site + "/sources/purgeall", reason: ReasonWriteWord, rule: `write word "purge" in path`},
		{name: "deny purge_all", url: site + "/sources/purge_all", reason: ReasonWriteWord},
		{name: "deny unpublish", url: site + "/sources/unpublish", reason: ReasonWriteWord, rule: `write word "unpublish" in path`},
		{name: "deny bulkdelete", url: site + "/sources/bulkdelete", reason: ReasonWriteWord, rule: `write word "delete" in path`},
		{name: "deny close under star", url: site + "/sources/b/close", reason: ReasonWriteWord, rule: `write word "close" in path`},
		{name: "deny closing", url: site + "/sources/b/closing", reason: ReasonWriteWord, rule: `write word "close" in path`},
		{name: "deny dropped", url: site + "/sources/dropped", reason: ReasonWriteWord, rule: `write word "drop" in path`},
		{name: "deny deletion", url: site + "/sources/deletion", reason: ReasonWriteWord},
		{name: "deny four times encoded delete", url: site + "/sources/%25252564elete", reason: ReasonWriteWord, rule: `write word "delete" in path`},
		{name: "deny five times encoded", url: site + "/sources/%2525252564elete", reason: ReasonWriteWord, rule: "percent-encoded beyond 4 decodings in path"},
		{name: "deny five times encoded query", url: site + "/search?q=%2525252541", reason: ReasonWriteWord, rule: "percent-encoded beyond 4 decodings in query value"},

		// Segments are segments: a variable part never holds an encoded / or \, a ; parameter or
		// a dot segment.
		{name: "deny encoded slash in param", url: site + "/records/..%2Fadmin", reason: ReasonUnsafeSegment, rule: "path segment 2 holds an encoded / or \\"},
		{name: "deny lower case encoded slash", url: site + "/records/a%2fb", reason: ReasonUnsafeSegment},
		{name: "deny double encoded slash", url: site + "/records/a%252Fb", reason: ReasonUnsafeSegment},
		{name: "deny encoded backslash", url: site + "/records/..%5Cadmin", reason: ReasonUnsafeSegment},
		{name: "deny double encoded backslash", url: site + "/sources/%255c", reason: ReasonUnsafeSegment},
		{name: "deny dot dot semicolon", url: site + "/sources/..;/admin", reason: ReasonUnsafeSegment, rule: "path segment 2 holds a ; parameter"},
		{name: "deny matrix parameter", url: site + "/records/SYN-1;jsessionid=x", reason: ReasonUnsafeSegment},
		{name: "deny encoded semicolon", url: site + "/records/SYN-1%3Bx", reason: ReasonUnsafeSegment},
		{name: "deny double encoded dot dot", url: site + "/sources/%252e%252e/admin", reason: ReasonUnsafeSegment, rule: "path segment 2 decodes to a dot segment"},
		{name: "deny double encoded dot", url: site + "/records/%252e", reason: ReasonUnsafeSegment},
		{name: "deny encoded nul", url: site + "/records/SYN-1%00", reason: ReasonUnsafeSegment},

		// Query parameters are part of the route.
		{name: "deny undeclared parameter", url: site + "/records/SYN-0042?public=1", reason: ReasonQueryParam, rule: site + " read /records/{id}: query parameter not named by the route"},
		{name: "deny undeclared search parameter", url: site + "/search?q=SYN-0042&d=secret", reason: ReasonQueryParam},
		{name: "deny repeated parameter", url: site + "/search?q=SYN-0042&q=x", reason: ReasonQueryParam},
		{name: "allow bare question mark", url: site + "/records/SYN-0042?", want: Allow, reason: ReasonAllowed},

		// Routes.
		{name: "deny unknown route", url: site + "/admin", reason: ReasonNoRule},
		{name: "deny record subpath", url: site + "/records/SYN-1/history", reason: ReasonNoRule},
		{name: "deny empty param", url: site + "/records/", reason: ReasonNoRule},
		{name: "deny star prefix only", url: site + "/sources", reason: ReasonNoRule},
		{name: "deny dot segments leaving the route", url: site + "/sources/../admin", reason: ReasonNoRule},
		{name: "deny encoded dot segments leaving the route", url: site + "/sources/%2E%2E/admin", reason: ReasonNoRule},
		{name: "deny percent encoded literal segment", url: site + "/%72ecords/SYN-1", reason: ReasonNoRule},
		{name: "deny route of another site", url: "https://docs.example.org/records/SYN-1", reason: ReasonNoRule},

		// Origins.
		{name: "deny another port", url: "http://127.0.0.1:8082/", reason: ReasonPort},
		{name: "deny default port of allowed host", url: "http://127.0.0.1/", reason: ReasonPort},
		{name: "deny https on http origin", url: "https://127.0.0.1:8081/", reason: ReasonPort},
		{name: "deny http on https origin", url: "http://docs.example.org/guide/intro", reason: ReasonPort},
		{name: "deny another host", url: "http://127.0.0.2:8081/", reason: ReasonHost},
		{name: "deny localhost name", url: "http://localhost:8081/", reason: ReasonHost},
		{name: "deny subdomain", url: "https://evil.docs.example.org/guide/intro", reason: ReasonHost},
		{name: "deny suffix host", url: "https://docs.example.org.evil.com/guide/intro", reason: ReasonHost},
		{name: "deny decimal ipv4 of another host", url: "http://2130706434:8081/", reason: ReasonHost},
		{name: "deny hex ipv4 of another host", url: "http://0x7f000002:8081/", reason: ReasonHost},
		{name: "deny octal ipv4 of another host", url: "http://0177.0.0.2:8081/", reason: ReasonHost},
		{name: "deny short ipv4 of another host", url: "http://127.2:8081/", reason: ReasonHost},
		{name: "deny ipv6 loopback", url: "http://[::1]:8081/", reason: ReasonHost},
		{name: "deny ipv4 mapped ipv6", url: "http://[::ffff:127.0.0.1]:8081/", reason: ReasonHost},
		{name: "deny idna lookalike", url: "https://dоcs.example.org/guide/intro", reason: ReasonHost},
		{name: "deny backslash host confusion", url: `http://evil.com\@127.0.0.1:8081/`, reason: ReasonHost},
		{name: "deny hash host confusion", url: "http://evil.com#@127.0.0.1:8081/", reason: ReasonHost},
		{name: "deny userinfo", url: "http://user@127.0.0.1:8081/", reason: ReasonUserinfo},
		{name: "deny userinfo with password", url: "http://127.0.0.1:8081:pw@127.0.0.1:8081/", reason: ReasonUserinfo},
		{name: "deny userinfo redacted in decision", url: "http://admin:hunter2@127.0.0.1:8081/", reason: ReasonUserinfo, canonical: "http://redacted@127.0.0.1:8081/"},
		{name: "deny userinfo pointing elsewhere", url: "http://127.0.0.1:8081@evil.com/", reason: ReasonUserinfo},

		// Schemes.
		{name: "deny ws", url: "ws://127.0.0.1:8081/", reason: ReasonScheme, rule: "scheme ws"},
		{name: "deny wss", url: "wss://127.0.0.1:8081/", reason: ReasonScheme},
		{name: "deny data", url: "data:text/html,<b>x</b>", reason: ReasonScheme},
		{name: "deny blob", url: "blob:http://127.0.0.1:8081/uuid", reason: ReasonScheme},
		{name: "deny file", url: "file:///etc/passwd", reason: ReasonScheme},
		{name: "deny javascript", url: "javascript:alert(1)", reason: ReasonScheme},
		{name: "deny upper case javascript", url: "JaVaScRiPt:alert(1)", reason: ReasonScheme},
		{name: "deny about", url: "about:blank", reason: ReasonScheme},
		{name: "deny view-source", url: "view-source:http://127.0.0.1:8081/", reason: ReasonScheme},
		{name: "deny chrome", url: "chrome://settings", reason: ReasonScheme},
		{name: "deny ftp", url: "ftp://127.0.0.1:8081/", reason: ReasonScheme},
		{name: "deny mailto", url: "mailto:a@b.c", reason: ReasonScheme},

		// Malformed.
		{name: "deny empty", url: "", reason: ReasonMalformed},
		{name: "deny relative without base", url: "/records/SYN-1", reason: ReasonMalformed},
		{name: "deny bad port", url: "http://127.0.0.1:99999/", reason: ReasonMalformed},
		{name: "deny bad ipv6", url: "http://[::1/", reason: ReasonMalformed},
		{name: "deny forbidden host code point", url: "http://a b/", reason: ReasonMalformed},
		{name: "deny too long", url: site + "/search?q=" + strings.Repeat("a", MaxURLLength), reason: ReasonTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Decide(DecideArgs{Method: tt.method, URL: tt.url, Base: tt.base})
			if err != nil {
				t.Fatalf("Decide(%q): unexpected error %v", tt.url, err)
			}
			if got.Verdict != tt.want || got.Reason != tt.reason {
				t.Errorf("Decide(%s %q):\n\tgot  %v %q (rule %q)\n\twant %v %q", tt.method, tt.url, got.Verdict, got.Reason, got.Rule, tt.want, tt.reason)
			}
			if tt.canonical != "" && got.URL != tt.canonical {
				t.Errorf("Decide(%q).URL:\n\tgot  %q\n\twant %q", tt.url, got.URL, tt.canonical)
			}
			// A rule begins with the part a test names; write detection adds the position and the
			// rule that read it ("write word "close" in path segment 3: the * rest of …").
			if tt.rule != "" && !strings.HasPrefix(got.Rule, tt.rule) {
				t.Errorf("Decide(%q).Rule:\n\tgot  %q\n\twant %q", tt.url, got.Rule, tt.rule)
			}
		})
	}
}

func TestDecideRedirect(t *testing.T) {
	p := loadDemo(t)
	const cur = "http://127.0.0.1:8081/search?q=x"
	tests := []struct {
		name, location string
		want           Verdict
		reason         string
	}{
		{"relative path", "/records/SYN-1", Allow, ReasonAllowed},
		{"path relative", "records/SYN-1", Allow, ReasonAllowed}, // resolved against /search: /records/SYN-1
		{"protocol relative other host", "//evil.com/records/SYN-1", Deny, ReasonHost},
		{"backslash protocol relative", `\\evil.com/`, Deny, ReasonHost},
		{"delete route", "/records/SYN-1/delete?confirm=yes", Deny, ReasonWriteWord},
		{"javascript", "javascript:alert(1)", Deny, ReasonScheme},
		{"absolute other port", "http://127.0.0.1:8082/", Deny, ReasonPort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.DecideRedirect(cur, tt.location)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tt.want || got.Reason != tt.reason {
				t.Errorf("DecideRedirect(%q, %q):\n\tgot  %v %q\n\twant %v %q", cur, tt.location, got.Verdict, got.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestZeroValueIsDeny(t *testing.T) {
	var d Decision
	if d.Allowed() || d.Verdict.String() != "deny" {
		t.Fatalf("zero Decision: got %v, want deny", d.Verdict)
	}
	var p Policy // no sites at all
	got, err := p.Decide(DecideArgs{URL: "http://127.0.0.1:8081/"})
	if err != nil || got.Allowed() {
		t.Fatalf("empty Policy.Decide: got %v %v, want deny", got, err)
	}
}

func TestSearchURL(t *testing.T) {
	p := loadDemo(t)
	tests := []struct{ query, want string }{
		{"SYN-0042", "http://127.0.0.1:8081/search?q=SYN-0042"},
		{"a b&c=d#e", "http://127.0.0.1:8081/search?q=a+b%26c%3Dd%23e"},
		{"../../admin", "http://127.0.0.1:8081/search?q=..%2F..%2Fadmin"},
	}
	for _, tt := range tests {
		got, err := p.SearchURL(tt.query)
		if err != nil || got != tt.want {
			t.Errorf("SearchURL(%q):\n\tgot  %q %v\n\twant %q", tt.query, got, err, tt.want)
		}
		if d, _ := p.Decide(DecideArgs{URL: got}); !d.Allowed() {
			t.Errorf("SearchURL(%q) = %q is not allowed by the policy: %s", tt.query, got, d.Reason)
		}
	}
}

func TestLoadLimitsModels(t *testing.T) {
	p := loadDemo(t)
	want := Limits{MaxRedirectHops: 5, MaxSteps: 20, MaxRunBytes: DefaultMaxRunBytes,
		MaxPageRequests: DefaultMaxPageRequests, MaxConcurrentRequests: DefaultMaxConcurrentRequests}
	if got := p.Limits(); got != want {
		t.Errorf("Limits:\n\tgot  %+v\n\twant %+v", got, want)
	}
	if !p.ModelApproved("gpt-4.1-mini") || p.ModelApproved("gpt-4.1-mini ") || p.ModelApproved("gpt-5") {
		t.Errorf("ModelApproved: wrong answers for %v", p.ApprovedModels())
	}
	if got := len(p.Sites()); got != 2 {
		t.Errorf("Sites: got %d, want 2", got)
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	tests := []struct {
		file string
		want string // exact error text
	}{
		{"bad_unknown_key.yaml", "testdata/bad_unknown_key.yaml:5: writes: unknown key"},
		{"bad_missing_version.yaml", "testdata/bad_missing_version.yaml: version: missing; this program reads version: 1"},
		{"bad_bad_version.yaml", "testdata/bad_bad_version.yaml:1: version: unsupported version 2; this program reads version: 1"},
		{"bad_origin_path.yaml", `testdata/bad_origin_path.yaml:3: sites[0].origin: origin "http://127.0.0.1:8081/app" must be scheme://host[:port] with no path, query or fragment`},
		{"bad_origin_scheme.yaml", `testdata/bad_origin_scheme.yaml:3: sites[0].origin: origin "ftp://127.0.0.1:8081": scheme must be http or https`},
		{"bad_origin_userinfo.yaml", `testdata/bad_origin_userinfo.yaml:3: sites[0].origin: origin "http://user@127.0.0.1:8081" must not carry a user name or password`},
		{"bad_origin_missing.yaml", `testdata/bad_origin_missing.yaml: sites[0].origin: missing; write scheme://host:port, e.g. http://127.0.0.1:8081`},
		{"bad_route_relative.yaml", `testdata/bad_route_relative.yaml:6: sites[0].read[1]: route "records/{id}" must start with /`},
		{"bad_route_star_middle.yaml", `testdata/bad_route_star_middle.yaml:5: sites[0].read[0]: route "/a/*/b": * is only allowed as the last segment`},
		{"bad_route_bad_param.yaml", `testdata/bad_route_bad_param.yaml:5: sites[0].read[0]: route "/a/x{id}": a parameter must be a whole segment`},
		// A route may name its query parameters (/search?q={query}&page={n}); a template that
		// names one twice, or a pair without a value, is malformed.
		{"bad_route_query.yaml", `testdata/bad_route_query.yaml:5: sites[0].read[0]: route "/search?q={query}&q={again}": query parameter "q" is named twice`},
		{"bad_route_query_pair.yaml", `testdata/bad_route_query_pair.yaml:5: sites[0].read[0]: route "/search?q": query parameter "q" must be name={var} or name=value`},
		{"bad_search_not_allowed.yaml", `testdata/bad_search_not_allowed.yaml:5: sites[0].search: search path "/find" is not allowed by this site's read routes (no rule matched)`},
		{"bad_duplicate_origin.yaml", `testdata/bad_duplicate_origin.yaml:5: sites[1].origin: origin http://127.0.0.1:8081 is repeated from sites[0]`},
		{"bad_no_sites.yaml", `testdata/bad_no_sites.yaml: sites: at least one site is required`},
		{"bad_hops_range.yaml", `testdata/bad_hops_range.yaml:6: limits.max_redirect_hops: 99 is out of range 0..20`},
		{"bad_not_yaml.yaml", `testdata/bad_not_yaml.yaml:2: did not find expected node content`},
		{"bad_run_bytes_unit.yaml", `testdata/bad_run_bytes_unit.yaml:6: expected a byte count: a whole number, or one followed by KiB, MiB or GiB`},
		{"bad_run_bytes_range.yaml", `testdata/bad_run_bytes_range.yaml:6: limits.max_run_bytes: 524288 is out of range 1MiB..4GiB`},
		{"bad_page_requests_range.yaml", `testdata/bad_page_requests_range.yaml:6: limits.max_page_requests: 0 is out of range 1..10000`},
		{"bad_concurrent_range.yaml", `testdata/bad_concurrent_range.yaml:6: limits.max_concurrent_requests: 65 is out of range 1..64`},
		{"bad_wall.yaml", `testdata/bad_wall.yaml:5: wall: "always" is not one of auto, required, off`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", tt.file))
			if err == nil {
				t.Fatalf("Load(%s): got a policy, want error %q", tt.file, tt.want)
			}
			if p != nil {
				t.Errorf("Load(%s): got a non-nil policy with the error", tt.file)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Errorf("Load(%s): error %T is not a *LoadError", tt.file, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Load(%s):\n\tgot  %s\n\twant %s", tt.file, err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(missing): got %v, want an error wrapping os.ErrNotExist", err)
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"deleteAll", "delete all"},
		{"XMLHttpRequest", "xml http request"},
		{"bulk_remove-now", "bulk remove now"},
		{"record42delete", "record 42 delete"},
		{"SYN-0042", "syn 0042"},
		{"address", "address"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(words(tt.in), " "); got != tt.want {
			t.Errorf("words(%q):\n\tgot  %q\n\twant %q", tt.in, got, tt.want)
		}
	}
}

// wptCase is one entry of the Web Platform Tests URL data.
type wptCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Failure  bool    `json:"failure"`
	Protocol string  `json:"protocol"`
	Hostname string  `json:"hostname"`
	Port     string  `json:"port"`
	Pathname string  `json:"pathname"`
	Href     string  `json:"href"`
}

func loadWPT(t testing.TB) []wptCase {
	t.Helper()
	data, err := os.ReadFile("testdata/urltestdata.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var out []wptCase
	for _, r := range raw {
		if len(r) > 0 && r[0] == '"' {
			continue // a comment line
		}
		var c wptCase
		if err := json.Unmarshal(r, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

var defaultPorts = map[string]int{"http:": 80, "https:": 443, "ws:": 80, "wss:": 443}

// TestWPTConformance checks the policy's view of a URL against the Web Platform Tests URL data,
// which is what browsers are tested against: for every http, https, ws and wss case the canonical
// host, port and path are the expected ones, and every parse failure is denied.
func TestWPTConformance(t *testing.T) {
	cases := loadWPT(t)
	checked, failures := 0, 0
	for i, c := range cases {
		base := ""
		if c.Base != nil {
			base = *c.Base
		}
		if c.Failure {
			failures++
			// Build a policy that would allow the base's own origin, so that a failure could only be
			// denied because it failed to parse.
			p := policyForOrigin(t, base)
			d, err := p.Decide(DecideArgs{URL: c.Input, Base: base})
			if err != nil || d.Allowed() {
				t.Errorf("case %d: Decide(%q, base %q) on a parse failure: got %v %q, want deny", i, c.Input, base, d.Verdict, d.Reason)
			}
			continue
		}
		wantPort, special := defaultPorts[c.Protocol]
		if !special {
			continue
		}
		checked++
		u, err := ParseURL(c.Input, base)
		if err != nil {
			t.Errorf("case %d: ParseURL(%q, %q): %v, want %s", i, c.Input, base, err, c.Href)
			continue
		}
		if c.Port != "" {
			wantPort, _ = strconv.Atoi(c.Port)
		}
		if u.Host() != c.Hostname || u.Port() != wantPort || u.Path() != c.Pathname {
			t.Errorf("case %d: ParseURL(%q, %q):\n\tgot  host %q port %d path %q\n\twant host %q port %d path %q",
				i, c.Input, base, u.Host(), u.Port(), u.Path(), c.Hostname, wantPort, c.Pathname)
		}
		// The decision is taken on the same canonical URL, and only http and https can be allowed.
		d, err := policyForOrigin(t, c.Href).Decide(DecideArgs{URL: c.Input, Base: base})
		if err != nil {
			t.Fatalf("case %d: Decide: %v", i, err)
		}
		want, _, _ := strings.Cut(c.Href, "#")
		if u.HasUserinfo() {
			want = redactedHref(t, want)
		}
		if d.URL != want {
			t.Errorf("case %d: Decide(%q, %q).URL:\n\tgot  %q\n\twant %q", i, c.Input, base, d.URL, want)
		}
		switch {
		case c.Protocol == "ws:" || c.Protocol == "wss:":
			if d.Allowed() || d.Reason != ReasonScheme {
				t.Errorf("case %d: Decide(%q): got %v %q, want deny %q", i, c.Input, d.Verdict, d.Reason, ReasonScheme)
			}
		case u.HasUserinfo():
			if d.Allowed() || d.Reason != ReasonUserinfo {
				t.Errorf("case %d: Decide(%q): got %v %q, want deny %q", i, c.Input, d.Verdict, d.Reason, ReasonUserinfo)
			}
		case d.Reason == ReasonWriteWord:
			// A WPT path that happens to contain a write word.
		case d.Reason == ReasonQueryParam && strings.Trim(u.RawQuery(), "&") != "":
			// The test policy's routes name no query parameters: any parameter is denied.
		case d.Reason == ReasonUnsafeSegment && slices.ContainsFunc(splitPath(u.Path()), func(s string) bool { return unsafeSegment(s) != "" }):
			// A WPT path with an encoded slash, a ; parameter or a control character in a segment.
		case !d.Allowed():
			t.Errorf("case %d: Decide(%q, %q) with its own origin allowed: got %v %q (%s)", i, c.Input, base, d.Verdict, d.Reason, d.URL)
		}
	}
	if checked < 200 || failures < 200 {
		t.Fatalf("checked %d special-scheme cases and %d failures; the test data looks truncated", checked, failures)
	}
	t.Logf("checked %d http/https/ws/wss cases and %d parse failures", checked, failures)
}

// redactedHref is href with its userinfo replaced, written without the package's own code.
func redactedHref(t testing.TB, href string) string {
	scheme, rest, _ := strings.Cut(href, "://")
	at := strings.Index(rest, "@")
	if at < 0 {
		t.Fatalf("redactedHref(%q): no userinfo", href)
	}
	return scheme + "://redacted@" + rest[at+1:]
}

// policyForOrigin returns a policy allowing every path on the origin of raw (or a fixed origin when
// raw has none).
func policyForOrigin(t testing.TB, raw string) *Policy {
	origin := "http://example.org"
	if u, err := ParseURL(raw, ""); err == nil && (u.Scheme() == "http" || u.Scheme() == "https") && u.Host() != "" && !u.HasUserinfo() {
		origin = u.Origin()
	}
	p, err := Parse([]byte("version: 1\nsites:\n  - origin: "+origin+"\n    read: [/, /*]\n"), "wpt")
	if err != nil {
		t.Fatalf("policy for %q: %v", origin, err)
	}
	return p
}

// TestLoadBudgets checks the budget keys: byte counts with and without a unit, and the values
// that reach Limits.
func TestLoadBudgets(t *testing.T) {
	tests := []struct {
		runBytes string
		want     int64
	}{
		{"1048576", 1 << 20},
		{"64MiB", 64 << 20},
		{"64 MiB", 64 << 20},
		{"2048KiB", 2 << 20},
		{"1GiB", 1 << 30},
		{`"3 MiB"`, 3 << 20},
	}
	for _, tt := range tests {
		yaml := "version: 1\nsites:\n  - origin: http://127.0.0.1:8081\n    read: [/]\nlimits:\n  max_run_bytes: " + tt.runBytes +
			"\n  max_page_requests: 7\n  max_concurrent_requests: 2\n"
		p, err := Parse([]byte(yaml), "budgets")
		if err != nil {
			t.Errorf("max_run_bytes %s: %v", tt.runBytes, err)
			continue
		}
		got := p.Limits()
		if got.MaxRunBytes != tt.want || got.MaxPageRequests != 7 || got.MaxConcurrentRequests != 2 {
			t.Errorf("max_run_bytes %s:\n\tgot  %+v\n\twant MaxRunBytes %d, MaxPageRequests 7, MaxConcurrentRequests 2", tt.runBytes, got, tt.want)
		}
	}
}

// TestWallKey reads the "wall" key: absent is "" (the launch's default), each mode as written;
// any other value is refused with its line (and the key and the modes: bad_wall.yaml in
// TestLoadRejectsBadFiles).
func TestWallKey(t *testing.T) {
	base := "version: 1\nsites:\n  - origin: http://127.0.0.1:8081\n    read: [/]\n"
	for _, tt := range []struct {
		add  string
		want WallMode
	}{{"", ""}, {"wall: auto\n", WallAuto}, {"wall: required\n", WallRequired}, {"wall: off\n", WallOff}} {
		p, err := Parse([]byte(base+tt.add), "p")
		if err != nil {
			t.Fatalf("%q: %v", tt.add, err)
		}
		if p.Wall() != tt.want {
			t.Errorf("%q: Wall() = %q, want %q", tt.add, p.Wall(), tt.want)
		}
	}
	for _, bad := range []string{`wall: ""`, "wall: on", "wall: Required", "wall: [required]"} {
		_, err := Parse([]byte(base+bad+"\n"), "p")
		if err == nil || !strings.Contains(err.Error(), "p:5:") {
			t.Errorf("%q: %v, want an error naming the wall key's line", bad, err)
		}
	}
}
