package mcpguard

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTakeoverPageRefuses: the takeover page's answers to what is not a person's input under a
// lease (no browser is needed: each is refused before the browser is asked). An error never
// quotes the text it refuses.
func TestTakeoverPageRefuses(t *testing.T) {
	to, err := startTakeover(&Guard{cfg: Config{Logf: t.Logf}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer to.close()
	const typed = "hunter2-typed-\x01"
	for _, c := range []struct {
		name, method, path, ctype, origin, body string
		want                                    int
		says                                    string
	}{
		{"another token", "GET", "../" + strings.Repeat("0", 32) + "/", "", "", "", http.StatusNotFound, ""},
		{"frame without the lease", "GET", "frame", "", "", "", http.StatusConflict, "take it first"},
		{"input without the lease", "POST", "input", "application/json", "", `{"kind":"text","text":"abc"}`, http.StatusConflict, "take it first"},
		{"not JSON", "POST", "input", "text/plain", "", `kind=text`, http.StatusUnsupportedMediaType, "application/json"},
		{"not an object", "POST", "input", "application/json", "", `["text"]`, http.StatusBadRequest, "one JSON object"},
		{"an unknown field", "POST", "input", "application/json", "", `{"kind":"text","text":"a","script":"x"}`, http.StatusBadRequest, "one JSON object"},
		{"an unknown kind", "POST", "input", "application/json", "", `{"kind":"evaluate"}`, http.StatusBadRequest, `kind must be "click", "key" or "text"`},
		{"a key not by name", "POST", "input", "application/json", "", `{"kind":"key","key":"Control+W"}`, http.StatusBadRequest, "keys a person may press"},
		{"a click outside the frame", "POST", "input", "application/json", "", `{"kind":"click","x":2,"y":0.5}`, http.StatusBadRequest, "fractions 0..1"},
		{"unprintable text", "POST", "input", "application/json", "", `{"kind":"text","text":"hunter2-typed-\u0001"}`, http.StatusBadRequest, "printable characters only"},
		{"input from another site", "POST", "input", "application/json", "http://evil.example", `{"kind":"text","text":"a"}`, http.StatusForbidden, "cross-origin"},
		{"take from another site", "POST", "take", "", "http://evil.example", "", http.StatusForbidden, "cross-origin"},
		{"release from another site", "POST", "release", "", "http://evil.example", "", http.StatusForbidden, "cross-origin"},
		{"release without the lease", "POST", "release", "", "", "", http.StatusConflict, "nobody has the wheel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, to.url+c.path, strings.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || !strings.Contains(string(b), c.says) {
				t.Errorf("%s %s:\n\tgot  %d %q\n\twant %d saying %q", c.method, c.path, resp.StatusCode, b, c.want, c.says)
			}
			if strings.Contains(string(b), strings.TrimSuffix(typed, "\x01")) {
				t.Errorf("the answer quotes the text it refused: %q", b)
			}
		})
	}
}

// TestTakeoverGate: while a person has the wheel every call is refused; after hand-back a ref
// tool is refused until a result passes, and that result carries the note once.
func TestTakeoverGate(t *testing.T) {
	to := &takeover{held: true}
	for _, name := range []string{"browser_snapshot", "browser_navigate", "browser_click", "browser_close"} {
		if v := to.gate(name); v == nil || v.rule != RuleTakeover {
			t.Errorf("gate(%s) while held:\n\tgot  %+v\n\twant a %s refusal", name, v, RuleTakeover)
		}
	}
	to.held, to.changed = false, true
	if v := to.gate("browser_click"); v == nil || v.rule != RuleRef || !strings.Contains(v.reason, "changed by a person") {
		t.Errorf("gate(browser_click) after hand-back:\n\tgot  %+v\n\twant a %s refusal: the refs shown before are void", v, RuleRef)
	}
	if v := to.gate("browser_snapshot"); v != nil {
		t.Errorf("gate(browser_snapshot) after hand-back: got %+v, want it passed", v)
	}
	if got := to.after("### Page\n- Page URL: http://x/signin\n"); len(got) != 1 || got[0] != ChangedByPerson {
		t.Errorf("after: got %q, want the note once", got)
	}
	if got := to.after(""); got != nil {
		t.Errorf("after, again: got %q, want no note", got)
	}
	if v := to.gate("browser_click"); v != nil {
		t.Errorf("gate(browser_click) after a result passed: got %+v, want it passed", v)
	}
}
