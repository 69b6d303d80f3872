package policy

import "testing"

// fullParse is the WHATWG parser alone, without the fast path.
func fullParse(raw string) (*URL, error) {
	w, err := parser.Parse(raw)
	if err != nil {
		return nil, err
	}
	return fromWHATWG(w), nil
}

// checkFast fails when the fast path accepts raw but disagrees with the full parser.
func checkFast(t *testing.T, raw string) bool {
	t.Helper()
	fast, ok := parseFast(raw)
	if !ok {
		return false
	}
	full, err := fullParse(raw)
	if err != nil {
		t.Fatalf("parseFast(%q) accepted what the WHATWG parser refuses: %v", raw, err)
	}
	if *fast != *full {
		t.Fatalf("parseFast(%q):\n\tgot  %+v\n\twant %+v", raw, *fast, *full)
	}
	return true
}

func TestFastPathAgreesWithParser(t *testing.T) {
	accepted := []string{
		"http://127.0.0.1:8081/records/SYN-0042",
		"http://127.0.0.1:8081",
		"http://127.0.0.1:8081?q=1",
		"https://docs.example.org:443/guide/intro",
		"http://example.com:80/",
		"http://example.com/search?q=a+b%26c&x=~y",
		"http://example.com/a/b/?",
		"http://example.com/a#frag",
		"https://a-b.example/x;y=z/@:$!*()",
	}
	for _, raw := range accepted {
		if !checkFast(t, raw) {
			t.Errorf("parseFast(%q): took the full parser, want the fast path", raw)
		}
	}
	// Each of these needs the full parser: the fast path must decline them.
	declined := []string{
		"HTTP://example.com/", "http://Example.com/", "http://example.com./", "http://2130706433/",
		"http://0x7f.1/", "http://127.1/", "http://0177.0.0.1/", "http://127.0.0.01/", "http://1.2.3.4.5/",
		"http://xn--dcs-ldd.example/", "http://[::1]/", "http://u@example.com/", "http://u:p@example.com/",
		"http://example.com/a/../b", "http://example.com/a/%2e%2E/b", "http://example.com/./b",
		"http://example.com\\a", "http://example.com/a b", "http://exa\tmple.com/", " http://example.com/",
		"http://example.com:0/", "http://example.com:080/", "http://example.com:65536/", "http://example.com:/",
		"http://example.com/%zz", "http://example.com/?q='x'", "http://example.com/é", "http:example.com/",
		"http:/example.com/", "http:///example.com/", "https://example.com/\"", "http://ex_ample.com/",
		"http://-0/", "http://a.-0/", "http://a-.b/", // the parser reads "-0" as the number zero
		"http://20000000000000000000a/", "http://a.9b/", // the parser's number parsing refuses these
	}
	for _, raw := range declined {
		if checkFast(t, raw) {
			t.Errorf("parseFast(%q): took the fast path, want the full parser", raw)
		}
	}
}

// FuzzFastPath checks that the fast path never disagrees with the WHATWG parser.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:8081/records/SYN-0042", "https://a.b/c?d=e#f", "http://a:80", "http://a.b.c.d.e/",
		"http://1.2.3.4/", "http://255.255.255.255:65535/x", "http://a-/", "http://-a/", "http://a--b/",
		"http://a.0/", "http://a.09/", "http://a.0x/", "http://a/%2E", "http://a/b?c?d", "http://a/;=!$()*",
		// Segments a server may read as more than one (issue 11): the fast path must agree on them.
		"http://a/records/..%2Fadmin", "http://a/p/..;/admin", "http://a/r/%252e%252e/x", "http://a/r/a%5cb",
		"http://a/r/%25252564elete", "http://a/search?q=x&q=y&page=2", "http://a/r/x;jsessionid=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		checkFast(t, raw)
	})
}

// checkResolve fails when resolveFast accepts (ref, base) but disagrees with the full parser.
func checkResolve(t *testing.T, ref, base string) bool {
	t.Helper()
	fast, ok := resolveFast(ref, base)
	if !ok {
		return false
	}
	w, err := parser.ParseRef(base, ref)
	if err != nil {
		t.Fatalf("resolveFast(%q, base %q) accepted what the WHATWG parser refuses: %v", ref, base, err)
	}
	if full := fromWHATWG(w); *fast != *full {
		t.Fatalf("resolveFast(%q, base %q):\n\tgot  %+v\n\twant %+v", ref, base, *fast, *full)
	}
	return true
}

func TestResolveFastAgreesWithParser(t *testing.T) {
	const base = "http://127.0.0.1:8081/records/SYN-0042?x=1#f"
	accepted := []string{
		"http://127.0.0.1:8081/records/SYN-0001", "https://example.com/", "//example.com/a?b",
		"/records/SYN-0001", "/", "?q=2", "", "#top", "SYN-0001", "../sources/b/SYN-0042",
		"./SYN-0001", "..", ".", "../..", "../../../x", "a/./b/../c", "a//b", "a/..", "x?y#z",
		"sources/b/SYN-0042#fields",
	}
	for _, ref := range accepted {
		if !checkResolve(t, ref, base) {
			t.Errorf("resolveFast(%q, base %q): took the full parser, want the fast path", ref, base)
		}
	}
	declined := [][2]string{
		{"javascript:alert(1)", base}, {"http:SYN-0001", base}, {"HTTP://example.com/", base},
		{"mailto:a@b", base}, {"a:b/c", base}, {"%2e%2e/x", base}, {".%2E/x", base}, {"/a/../b", base},
		{"\\\\example.com/", base}, {"..\\x", base}, {"a\tb", base}, {" /x", base}, {"///example.com/", base},
		{"//u@example.com/", base}, {"//0x7f.1/", base}, {"/x y", base}, {"é", base},
		{"/x", "http://Example.com/"}, {"/x", "http://0x7f.1/"}, {"http://example.com/", "not a url"},
		{"/x", "javascript:void(0)"},
	}
	for _, c := range declined {
		if checkResolve(t, c[0], c[1]) {
			t.Errorf("resolveFast(%q, base %q): took the fast path, want the full parser", c[0], c[1])
		}
	}
}

// FuzzResolveFast checks that resolving a reference on the fast path never disagrees with the
// WHATWG parser.
func FuzzResolveFast(f *testing.F) {
	for _, s := range [][2]string{
		{"../sources/b/SYN-0042", "http://127.0.0.1:8081/records/SYN-0042"},
		{"/records/SYN-0001", "http://127.0.0.1:8081/search?q=SYN-0001"},
		{"//offsite.invalid/x", "http://127.0.0.1:8081/about"}, {"?q=1#f", "https://a.b/c/d"},
		{"a/../../..", "http://a/b/c/d/"}, {".", "http://a/"}, {"..", "http://a/b"}, {"", "http://a/b?c"},
		{"x:y", "http://a/"}, {"./x:y", "http://a/b/"}, {"%2e/x", "http://a/b/"}, {"https://c/", "http://a/"},
		{"..%2Fadmin", "http://a/records/x"}, {"..;/admin", "http://a/p/q"}, {"%252e%252e/x", "http://a/r/"},
		{"x?q=1&q=2", "http://a/search"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, ref, base string) {
		checkResolve(t, ref, base)
	})
}
