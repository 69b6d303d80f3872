package coordinator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/browsertest"
)

// longPage is a page of n numbered paragraphs, plain ASCII (the fake browser's offsets are
// characters, the bridge's bytes: the same for ASCII).
func longPage(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the manual says little of note.\n", i)
	}
	return b.String()
}

// readResults runs a model that opens rec and then makes calls, and returns the decoded results
// of those calls (the open_url result first).
func readResults(t *testing.T, text string, chunk int, calls ...coordinator.ScriptStep) ([]map[string]any, *browsertest.Pages) {
	t.Helper()
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	b := browsertest.NewPages(map[string]browsertest.Page{rec: {
		Title: "SYN-0042", Text: text, Fields: []bridge.Field{{Label: "Record ID", Value: "SYN-0042"}},
	}})
	b.Chunk = chunk
	steps := append([]coordinator.ScriptStep{open(rec)}, calls...)
	steps = append(steps, answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))
	model := &recordingModel{Model: script(steps...)}
	res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
	if res.Status != coordinator.StatusAnswered {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	var out []map[string]any
	for _, m := range toolMessages(model.last) {
		env, err := coordinator.DecodeResult(m.Content)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out, b
}

// TestReadPageLength: read_page with length joins whole chunks, in order and without a gap, up
// to length bytes, and the next read_page goes on where it stopped.
func TestReadPageLength(t *testing.T) {
	text := longPage(200) // about 10 KB
	res, _ := readResults(t, text, 1000,
		call(coordinator.ToolReadPage, `{"length":3500}`),
		call(coordinator.ToolReadPage, `{}`),
		call(coordinator.ToolReadPage, `{"offset":0,"length":65536}`),
	)
	data := func(i int) map[string]any { return res[i]["untrusted_page_data"].(map[string]any) }
	if got := data(1)["text"].(string); got != text[1000:4000] || data(1)["offset"] != 1000.0 || data(1)["next"] != 4000.0 || data(1)["more"] != true {
		t.Errorf("length 3500 from 1000: offset %v next %v more %v, %d bytes", data(1)["offset"], data(1)["next"], data(1)["more"], len(got))
	}
	if data(2)["offset"] != 4000.0 || data(2)["text"].(string) != text[4000:5000] {
		t.Errorf("the next read started at %v, want 4000", data(2)["offset"])
	}
	if got := data(3)["text"].(string); got != text || data(3)["more"] != false {
		t.Errorf("the whole page in one read: %d of %d bytes, more %v", len(got), len(text), data(3)["more"])
	}
}

// TestReadPageFind: find returns the passages around each match (case and white space aside)
// with their offsets into the page's text, counts every match, and searches from offset.
func TestReadPageFind(t *testing.T) {
	text := longPage(300) + "The  Default\nTablespace is pg_default.\n" + longPage(100) + "the default tablespace again\n"
	res, b := readResults(t, text, 1000,
		call(coordinator.ToolReadPage, `{"find":"default TABLESPACE"}`),
		call(coordinator.ToolReadPage, `{"find":"no such phrase in it"}`),
		call(coordinator.ToolReadPage, `{"find":"Paragraph 7 ","offset":12000}`),
	)
	d := res[1]["untrusted_page_data"].(map[string]any)
	ps := d["passages"].([]any)
	if d["matches"] != 2.0 || len(ps) != 2 || d["more"] != false {
		t.Fatalf("find: %v matches, %d passages, more %v", d["matches"], len(ps), d["more"])
	}
	for _, p := range ps {
		p := p.(map[string]any)
		off, next, got := int(p["offset"].(float64)), int(p["next"].(float64)), p["text"].(string)
		if text[off:next] != got || !strings.Contains(strings.ToLower(strings.Join(strings.Fields(got), " ")), "default tablespace") {
			t.Errorf("passage at %d..%d is not the page's text there or lacks the phrase: %q", off, next, got)
		}
		if len(got) > 2*400+len("default tablespace")+2 {
			t.Errorf("passage of %d bytes", len(got))
		}
	}
	if d := res[2]["untrusted_page_data"].(map[string]any); d["matches"] != 0.0 || len(d["passages"].([]any)) != 0 {
		t.Errorf("a phrase not on the page: %v", d)
	}
	d = res[3]["untrusted_page_data"].(map[string]any)
	if s := d["searched"].([]any); s[0] != 12000.0 || s[1] != float64(len(text)) || d["matches"] != float64(strings.Count(text[12000:], "Paragraph 7 ")) {
		t.Errorf("find from 12000: searched %v, %v matches, want %d", s, d["matches"], strings.Count(text[12000:], "Paragraph 7 "))
	}
	// The phrase went nowhere: the browser was asked to open the page and read it, nothing else.
	for _, c := range b.Calls() {
		if strings.Contains(c, "efault") || strings.Contains(c, "phrase") {
			t.Errorf("the browser was given the phrase: %q", c)
		}
	}
}

// TestReadPageArgs: bad lengths and find phrases are refused with a reason that names them, and
// nothing is read.
func TestReadPageArgs(t *testing.T) {
	for _, tc := range []struct{ args, reason string }{
		{`{"length":0}`, `argument "length" is out of range 1..65536`},
		{`{"length":65537}`, `argument "length" is out of range 1..65536`},
		{`{"length":"9"}`, `argument "length" must be a whole number`},
		{`{"find":""}`, `argument "find" is empty`},
		{`{"find":"   "}`, `argument "find" is empty`},
		{`{"find":"` + strings.Repeat("x", 201) + `"}`, `argument "find" is longer than 200 characters`},
		{`{"find":"a\u0007b"}`, `argument "find" contains control characters`},
		{`{"find":7}`, `argument "find" must be a string`},
		{`{"find":"a","length":10}`, `arguments "find" and "length" do not go together: find returns passages`},
	} {
		res, b := readResults(t, longPage(10), 1000, call(coordinator.ToolReadPage, tc.args))
		if res[1]["status"] != "refused" || res[1]["reason"] != tc.reason {
			t.Errorf("%s: %v %v, want refused %q", tc.args, res[1]["status"], res[1]["reason"], tc.reason)
		}
		for _, c := range b.Calls() {
			if strings.HasPrefix(c, "Read") {
				t.Errorf("%s: the browser read (%s) for a refused call", tc.args, c)
			}
		}
	}
}
