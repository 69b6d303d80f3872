package coordinator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
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
		Title: "SYN-0042", Text: text, Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}},
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

// TestOpenURLLength: open_url with length hands out the page's text from its start joined as
// read_page's length joins it (whole chunks, the first always, in order and without a gap, up to
// length bytes), in the same result with the same fields and links; the next read_page goes on
// where it stopped. Without length it is the first chunk, as before.
func TestOpenURLLength(t *testing.T) {
	const rec = "http://127.0.0.1:8081/records/SYN-0042"
	text := longPage(200) // about 10 KB
	res, b := readResults(t, text, 1000,
		call(coordinator.ToolOpenURL, `{"url":"`+rec+`","length":3500}`),
		call(coordinator.ToolReadPage, `{}`),
		call(coordinator.ToolOpenURL, `{"url":"`+rec+`","length":65536}`),
		call(coordinator.ToolOpenURL, `{"url":"`+rec+`","length":10}`),
	)
	data := func(i int) map[string]any { return res[i]["untrusted_page_data"].(map[string]any) }
	for _, tc := range []struct {
		i          int
		next       int
		more       bool
		what       string
		wantFields int
	}{
		{0, 1000, true, "no length: the first chunk", 1},
		{1, 3000, true, "length 3500: three whole chunks", 1},
		{3, len(text), false, "length 65536: the whole page", 1},
		{4, 1000, true, "length 10: the first chunk, which is always given", 1},
	} {
		d := data(tc.i)
		if res[tc.i]["tool"] != coordinator.ToolOpenURL || res[tc.i]["status"] != "ok" {
			t.Errorf("%s: %v %v", tc.what, res[tc.i]["tool"], res[tc.i]["status"])
			continue
		}
		if got := d["text"].(string); got != text[:tc.next] || d["offset"] != 0.0 || d["next"] != float64(tc.next) || d["more"] != tc.more {
			t.Errorf("%s:\n\tgot  offset %v next %v more %v, %d bytes\n\twant offset 0 next %d more %v, the page's first %d bytes",
				tc.what, d["offset"], d["next"], d["more"], len(got), tc.next, tc.more, tc.next)
		}
		if fs, _ := d["fields"].([]any); len(fs) != tc.wantFields || d["title"] != "SYN-0042" {
			t.Errorf("%s: title %v, fields %v", tc.what, d["title"], d["fields"])
		}
		if _, ok := d["links"].([]any); !ok {
			t.Errorf("%s: no links list: %v", tc.what, d)
		}
	}
	if d := data(2); d["offset"] != 3000.0 || d["text"].(string) != text[3000:4000] {
		t.Errorf("the read after open_url length 3500 started at %v, want 3000", d["offset"])
	}
	// The browser read the chunks joined and the one that did not fit (it was proven), no more.
	// A first chunk that fills length asks for no more.
	want := []string{"Open " + rec, "Fields", "Links", "Open " + rec, "Read 1000", "Read 2000", "Read 3000", "Fields", "Links", "Read 3000",
		"Open " + rec, "Read 1000", "Read 2000", "Read 3000", "Read 4000", "Read 5000", "Read 6000", "Read 7000", "Read 8000", "Read 9000", "Fields", "Links",
		"Open " + rec, "Fields", "Links"}
	if got := b.Calls(); !slices.Equal(got, want) {
		t.Errorf("browser calls:\n\tgot  %q\n\twant %q", got, want)
	}
}

// TestOpenURLLengthArgs: a bad length is refused with a reason that names it, before the policy
// or the browser: nothing is opened.
func TestOpenURLLengthArgs(t *testing.T) {
	const rec = "http://127.0.0.1:8081/records/SYN-0042"
	for _, tc := range []struct{ args, reason string }{
		{`{"url":"` + rec + `","length":0}`, `argument "length" is out of range 1..65536`},
		{`{"url":"` + rec + `","length":-5}`, `argument "length" is out of range 1..65536`},
		{`{"url":"` + rec + `","length":65537}`, `argument "length" is out of range 1..65536`},
		{`{"url":"` + rec + `","length":"9"}`, `argument "length" must be a whole number`},
		{`{"url":"` + rec + `","length":1.5}`, `argument "length" must be a whole number`},
		{`{"url":"` + rec + `","length":null}`, `argument "length" must be a whole number`},
		{`{"url":"` + rec + `","length":9,"length":10}`, `argument "length" given twice`},
		{`{"link":1,"length":0}`, `argument "length" is out of range 1..65536`},
		{`{"length":100}`, `missing argument "url"`},
		{`{"url":"https://example.com/","length":0}`, `argument "length" is out of range 1..65536`},
	} {
		res, b := readResults(t, longPage(10), 1000, call(coordinator.ToolOpenURL, tc.args))
		if res[1]["status"] != "refused" || res[1]["rule"] != coordinator.RuleArguments || res[1]["reason"] != tc.reason {
			t.Errorf("open_url %s:\n\tgot  %v %v %v\n\twant refused, rule %q, reason %q", tc.args, res[1]["status"], res[1]["rule"], res[1]["reason"], coordinator.RuleArguments, tc.reason)
		}
		if opened := b.Opened(); len(opened) != 1 {
			t.Errorf("open_url %s: the browser opened %q for a refused call", tc.args, opened[1:])
		}
	}
}

// provenPages is a browser that proves a page as it is read (coordinator.SoFar): soFarPages
// whose page counts as whole once a read has reached the page's end.
type provenPages struct{ soFarPages }

func (b *provenPages) Open(ctx context.Context, url string) (browse.Page, error) {
	p, err := b.Pages.Open(ctx, url)
	b.whole = err == nil && !p.More
	return p, err
}

func (b *provenPages) Read(ctx context.Context, offset int) (browse.Chunk, error) {
	c, err := b.Pages.Read(ctx, offset)
	if err == nil && !c.More {
		b.whole = true
	}
	return c, err
}

// TestOpenURLLengthSoFar: the fields and links an open_url result carries are those of the part
// of the page read for it: with a length that reaches the page's end, the whole page's, and
// fields_and_links_so_far is not set; with none, the first chunk's, and it is. The evidence is
// what was handed out.
func TestOpenURLLengthSoFar(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	for _, tc := range []struct {
		args       string
		wantN      int
		wantSoFar  bool
		wantFields int
	}{
		{`{"url":"` + rec + `"}`, 1, true, 1},
		{`{"url":"` + rec + `","length":2500}`, 1, true, 1},
		{`{"url":"` + rec + `","length":65536}`, 2, false, 2},
	} {
		b := &provenPages{soFarPages{Pages: browsertest.NewPages(map[string]browsertest.Page{rec: {
			Title: "SYN-0042", Text: longPage(100),
			Links:  []browse.Link{{Text: "SYN-0001", URL: origin + "/records/SYN-0001"}, {Text: "Registry B", URL: origin + "/sources/b/SYN-0042"}},
			Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}, {Label: "Status", Value: "Active"}},
		}})}}
		b.Chunk = 1000
		model := &recordingModel{Model: script(call(coordinator.ToolOpenURL, tc.args), answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
		if res.Status != coordinator.StatusAnswered {
			t.Fatalf("%s: status %s: %s", tc.args, res.Status, res.Reason)
		}
		env, err := coordinator.DecodeResult(toolMessages(model.last)[0].Content)
		if err != nil {
			t.Fatal(err)
		}
		data := env["untrusted_page_data"].(map[string]any)
		soFar, _ := data["fields_and_links_so_far"].(bool)
		if nl, nf := len(data["links"].([]any)), len(data["fields"].([]any)); nl != tc.wantN || nf != tc.wantN || soFar != tc.wantSoFar {
			t.Errorf("open_url %s:\n\tgot  %d links, %d fields, so far %v\n\twant %d, %d, %v", tc.args, nl, nf, soFar, tc.wantN, tc.wantN, tc.wantSoFar)
		}
		if len(res.Evidence) != tc.wantFields {
			t.Errorf("open_url %s: evidence %v, want %d fields", tc.args, res.Evidence, tc.wantFields)
		}
	}
}

// credentialOnRead is a browser whose page shows a credential field once it is read past its
// first chunk.
type credentialOnRead struct{ *browsertest.Pages }

func (b credentialOnRead) Read(ctx context.Context, offset int) (browse.Chunk, error) {
	return browse.Chunk{}, browse.ErrCredentialRequired
}

// TestOpenURLLengthCredential: a credential field met while open_url reads on for its length ends
// the run as read_page would: human_action_required, nothing of the page to the model, no evidence.
func TestOpenURLLengthCredential(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	const secret = "page-text-9f3c"
	b := credentialOnRead{browsertest.NewPages(map[string]browsertest.Page{rec: {
		Title: "SYN-0042", Text: secret + longPage(100), Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}},
	}})}
	b.Chunk = 1000
	model := &recordingModel{Model: script(call(coordinator.ToolOpenURL, `{"url":"`+rec+`","length":65536}`),
		answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
	res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
	if res.Status != coordinator.StatusHuman {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	if model.calls != 1 || len(res.Evidence) != 0 {
		t.Errorf("after the credential field: %d model turns, evidence %v", model.calls, res.Evidence)
	}
	for _, m := range model.last {
		if strings.Contains(m.Content, secret) {
			t.Errorf("the page's text reached the model: %.200q", m.Content)
		}
	}
}

// emptyFirst is a browser whose page's first read proved nothing in its time (an empty first
// chunk that says more follows, as the bridge's under load); the next read gives the text.
type emptyFirst struct{ *browsertest.Pages }

func (b emptyFirst) Open(ctx context.Context, url string) (browse.Page, error) {
	p, err := b.Pages.Open(ctx, url)
	p.Text, p.Next, p.More = "", 0, true
	return p, err
}

// TestOpenURLLengthEmptyFirst: open_url with length reads on from an empty first chunk that says
// more follows, and gives the first chunk read even when it alone is longer than length; without
// length the empty chunk is what it gives, and read_page goes on from it.
func TestOpenURLLengthEmptyFirst(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	text := longPage(100) // about 5 KB
	for _, tc := range []struct {
		args     string
		wantText string
		wantMore bool
	}{
		{`{"url":"` + rec + `","length":65536}`, text, false},
		{`{"url":"` + rec + `","length":10}`, text[:1000], true},
		{`{"url":"` + rec + `"}`, "", true},
	} {
		b := emptyFirst{browsertest.NewPages(map[string]browsertest.Page{rec: {
			Title: "SYN-0042", Text: text, Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}},
		}})}
		b.Chunk = 1000
		model := &recordingModel{Model: script(call(coordinator.ToolOpenURL, tc.args), call(coordinator.ToolReadPage, `{}`),
			answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
		if res.Status != coordinator.StatusAnswered {
			t.Fatalf("%s: status %s: %s", tc.args, res.Status, res.Reason)
		}
		tm := toolMessages(model.last)
		env, err := coordinator.DecodeResult(tm[0].Content)
		if err != nil {
			t.Fatal(err)
		}
		d := env["untrusted_page_data"].(map[string]any)
		if got := d["text"].(string); got != tc.wantText || d["more"] != tc.wantMore || d["next"] != float64(len(tc.wantText)) {
			t.Errorf("open_url %s:\n\tgot  %d bytes, next %v, more %v\n\twant %d bytes, more %v", tc.args, len(got), d["next"], d["more"], len(tc.wantText), tc.wantMore)
		}
		env, err = coordinator.DecodeResult(tm[1].Content)
		if err != nil {
			t.Fatal(err)
		}
		if d := env["untrusted_page_data"].(map[string]any); tc.wantMore && d["offset"] != float64(len(tc.wantText)) {
			t.Errorf("open_url %s: the read after it started at %v, want %d", tc.args, d["offset"], len(tc.wantText))
		}
	}
}

// stallAt is a browser whose read at offset at proves nothing in its time, stalls times (an
// empty chunk that says more follows, as the bridge's under load), and then reads on.
type stallAt struct {
	*browsertest.Pages
	at, stalls int
}

func (b *stallAt) Read(ctx context.Context, offset int) (browse.Chunk, error) {
	if offset == b.at && b.stalls > 0 {
		b.stalls--
		return browse.Chunk{Offset: offset, Next: offset, More: true}, nil
	}
	return b.Pages.Read(ctx, offset)
}

// TestReadPageFindStall: a find reads once more from a read that proved nothing (the proof goes
// on where it stopped) and finds what follows; two in a row end the search there, saying there
// is more.
func TestReadPageFindStall(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	text := longPage(100) + "The default tablespace is pg_default.\n"
	for _, tc := range []struct {
		stalls      int
		wantMatches float64
		wantEnd     int
		wantMore    bool
	}{
		{1, 1, len(text), false},
		{2, 0, 3000, true},
	} {
		b := &stallAt{Pages: browsertest.NewPages(map[string]browsertest.Page{rec: {
			Title: "SYN-0042", Text: text, Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}},
		}}), at: 3000, stalls: tc.stalls}
		b.Chunk = 1000
		model := &recordingModel{Model: script(open(rec), call(coordinator.ToolReadPage, `{"find":"default tablespace"}`),
			answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
		if res.Status != coordinator.StatusAnswered {
			t.Fatalf("%d stalls: status %s: %s", tc.stalls, res.Status, res.Reason)
		}
		env, err := coordinator.DecodeResult(toolMessages(model.last)[1].Content)
		if err != nil {
			t.Fatal(err)
		}
		d := env["untrusted_page_data"].(map[string]any)
		if s := d["searched"].([]any); d["matches"] != tc.wantMatches || s[1] != float64(tc.wantEnd) || d["more"] != tc.wantMore {
			t.Errorf("%d stalls:\n\tgot  %v matches, searched %v, more %v\n\twant %v, to %d, more %v", tc.stalls, d["matches"], s, d["more"], tc.wantMatches, tc.wantEnd, tc.wantMore)
		}
	}
}
