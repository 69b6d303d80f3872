package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutKeepsWholeCharacters(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short stays", "abc", 5, "abc"},
		{"exact stays", "abc", 3, "abc"},
		{"ascii cut", "abcdef", 4, "abcd"},
		{"cut inside a two-byte character", "aé", 2, "a"},     // é is 2 bytes
		{"cut inside a three-byte character", "ab€", 4, "ab"}, // € is 3 bytes
		{"cut inside a four-byte character", "a😀b", 3, "a"},   // 😀 is 4 bytes
		{"cut after a whole character", "a€b", 4, "a€"},       //
		{"invalid utf-8 replaced", "a\xffb", 10, "a\uFFFDb"},  //
		{"invalid utf-8 replaced then cut", "a\xffb", 2, "a"}, // U+FFFD is 3 bytes
		{"zero", "abc", 0, ""},                                //
		{"only multibyte", "€€€", 5, "€"},                     //
		{"empty", "", 3, ""},                                  //
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cut(tt.in, tt.n)
			if got != tt.want {
				t.Errorf("Cut(%q, %d):\n\tgot  %q\n\twant %q", tt.in, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) || len(got) > tt.n {
				t.Errorf("Cut(%q, %d) = %q: not valid UTF-8 within %d bytes", tt.in, tt.n, got, tt.n)
			}
		})
	}
	// Every cut of a multi-byte text is valid and bounded.
	s := strings.Repeat("aé€😀", 20)
	for n := 0; n <= len(s)+1; n++ {
		if got := Cut(s, n); !utf8.ValidString(got) || len(got) > n || !strings.HasPrefix(s, got) || len(got) < n-3 {
			t.Fatalf("Cut(%q, %d) = %q", s, n, got)
		}
	}
}

func TestClipMarksTheCut(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"a€", 2, "a…"},
		{"a\xff", 5, "a\uFFFD"},
	} {
		if got := Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d):\n\tgot  %q\n\twant %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestTextAndOriginPathNeverKeepAQuery plants a secret in the query, the fragment and the userinfo
// and checks that none of them is kept, while the origin and path stay.
func TestTextAndOriginPathNeverKeepAQuery(t *testing.T) {
	const secret = "ZQXsecret4410"
	texts := map[string]string{
		"no rule matched":               "no rule matched",
		"  padded  ":                    "padded",
		"denied http://h/p?q=" + secret: "denied http://h/p",
		"denied http://h/p#" + secret:   "denied http://h/p",
		"fetch http://" + secret + ":" + secret + "@h/p failed": "fetch http://h/p failed",
		"fetch http://u@" + secret + "@h/p":                     "fetch http://h/p",
		"error?" + secret:                                       "error",
		strings.Repeat("é", 150):                                strings.Repeat("é", 100),
	}
	for in, want := range texts {
		if got := Text(in, MaxTextLen); got != want {
			t.Errorf("Text(%q):\n\tgot  %q\n\twant %q", in, got, want)
		}
	}
	urls := map[string][2]string{
		"http://127.0.0.1:8081/records/SYN-1?q=" + secret + "#" + secret: {"http://127.0.0.1:8081", "/records/SYN-1"},
		"https://" + secret + ":" + secret + "@h.example/a":              {"https://h.example", "/a"},
		"data:text/html," + secret:                                       {"data:", ""},
		"javascript:alert('" + secret + "')":                             {"javascript:", ""},
		"about:blank?" + secret:                                          {"about:", "blank"},
		"::not a url":                                                    {"", ""},
	}
	for in, want := range urls {
		o, p := OriginPath(in)
		if o != want[0] || p != want[1] {
			t.Errorf("OriginPath(%q):\n\tgot  %q %q\n\twant %q %q", in, o, p, want[0], want[1])
		}
		for _, got := range []string{o + p, CleanURL(in)} {
			if strings.Contains(got, secret) || len(got) > MaxShortLen+MaxPathLen {
				t.Errorf("OriginPath/CleanURL(%q) kept %q", in, got)
			}
		}
	}
	if _, p := OriginPath("http://h/" + strings.Repeat("€", 400)); len(p) != MaxPathLen {
		t.Errorf("OriginPath of a long path: got %d bytes, want %d", len(p), MaxPathLen)
	}
	if got := CleanURL("::bad?" + secret); got != "::bad" {
		t.Errorf("CleanURL of an unparseable URL: got %q, want %q", got, "::bad")
	}
}

func TestEntryClean(t *testing.T) {
	const secret = "ZQXsecret4410"
	r := Entry{
		N: 3, Method: "GET", Origin: "http://h", Path: "/p?x=" + secret, Verdict: Allow,
		Rule: "http://h read /p?" + secret, Reason: "allowed read route#" + secret, Layer: LayerBrowser,
	}.Clean()
	want := Entry{N: 3, Method: "GET", Origin: "http://h", Path: "/p", Verdict: Allow, Rule: "http://h read /p", Reason: "allowed read route", Layer: LayerBrowser}
	if r != want {
		t.Errorf("Clean:\n\tgot  %+v\n\twant %+v", r, want)
	}
	d, _ := loadDemoDecide(t, "http://127.0.0.1:8081/records/SYN-0042?x="+secret)
	rec := EntryOf(LayerProxy, "GET", "http://127.0.0.1:8081/records/SYN-0042?x="+secret, d)
	if rec.URL() != "http://127.0.0.1:8081/records/SYN-0042" || rec.Verdict != d.Verdict || rec.Reason != d.Reason || rec.Layer != LayerProxy {
		t.Errorf("EntryOf: got %+v from %+v", rec, d)
	}
	if ParseVerdict("allow") != Allow || ParseVerdict("deny") != Deny || ParseVerdict("ALLOW") != Deny {
		t.Error("ParseVerdict does not invert Verdict.String")
	}
}

func loadDemoDecide(t *testing.T, raw string) (Decision, error) {
	t.Helper()
	return loadDemo(t).Decide(DecideArgs{URL: raw})
}
