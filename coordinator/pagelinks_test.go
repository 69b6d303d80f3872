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

// link is an open_url call by link number.
func link(n int) coordinator.ScriptStep {
	return call(coordinator.ToolOpenURL, fmt.Sprintf(`{"link":%d}`, n))
}

// TestPageLinks: the links an open_url result carries are numbered and presented exactly as
// list_links's are, and only those: a link the result left out (denied, or past the cap) opens
// neither by its number nor by its URL until list_links presents it.
func TestPageLinks(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	// 1: a write link (denied); 2..26: 25 other records' pages (allowed); 27: the record's second
	// source (allowed).
	links := []browse.Link{{Text: "Edit", URL: rec + "/edit"}}
	for i := 1; i <= 25; i++ {
		links = append(links, browse.Link{Text: fmt.Sprintf("SYN-%04d", i), URL: fmt.Sprintf("%s/records/SYN-%04d", origin, i)})
	}
	links = append(links, browse.Link{Text: "Registry B", URL: origin + "/sources/b/SYN-0042"})
	b := browsertest.NewPages(map[string]browsertest.Page{rec: {
		Title: "SYN-0042", Links: links,
		Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}, {Label: "Status", Value: "Active"}},
	}})
	model := &recordingModel{Model: script(
		open(rec),
		link(1),                          // the write link: not in the result
		link(27),                         // past the cap
		link(26),                         // past the cap
		open(origin+"/records/SYN-0025"), // link 26's URL, not presented yet
		link(21),                         // the last link the result gave
		open(rec),                        // back, by its URL
		call(coordinator.ToolListLinks, `{}`),
		link(26), // now presented
		answer("SYN-0042", map[string]string{"Status": "Active"}, rec),
	)}
	res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
	if res.Status != coordinator.StatusAnswered {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	var got []string
	for _, s := range res.Steps {
		got = append(got, s.Verdict.String()+" "+s.Reason)
	}
	allow := "allow allowed read route"
	want := []string{
		allow,
		"deny " + coordinator.ReasonNoLink,
		"deny " + coordinator.ReasonNoLink,
		"deny " + coordinator.ReasonNoLink,
		"deny " + coordinator.ReasonComposedURL,
		allow,
		allow,
		"allow current page",
		allow,
		"allow " + coordinator.ReasonAnswered,
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps:\n\tgot  %q\n\twant %q", got, want)
	}
	opened := b.Opened()
	wantOpened := []string{rec, origin + "/records/SYN-0020", rec, origin + "/records/SYN-0025"}
	if !slices.Equal(opened, wantOpened) {
		t.Errorf("browser opened %q, want %q", opened, wantOpened)
	}
	// The first result: the allowed links 2..21 by their list_links numbers, the rest counted.
	env, err := coordinator.DecodeResult(toolMessages(model.last)[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	data := env["untrusted_page_data"].(map[string]any)
	ls := data["links"].([]any)
	first, last := ls[0].(map[string]any), ls[len(ls)-1].(map[string]any)
	if len(ls) != 20 || first["n"] != 2.0 || last["n"] != 21.0 || data["more_links"] != 6.0 {
		t.Errorf("links in the result: %d, first %v, last %v, more_links %v", len(ls), first, last, data["more_links"])
	}
	if fs := data["fields"].([]any); len(fs) != 2 {
		t.Errorf("fields in the result: %v", fs)
	}
	if strings.Contains(toolMessages(model.last)[0].Content, "/edit") {
		t.Error("the result gave the denied write link")
	}
}

// TestPageReadCredential: a credential field met while open_url reads the page's fields and links
// ends the run as extract_fields would: human_action_required, nothing of the page to the model.
func TestPageReadCredential(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	const secret = "page-text-9f3c"
	b := browsertest.NewPages(map[string]browsertest.Page{rec: {
		Title: "SYN-0042 " + secret, Text: secret, ReadErr: browse.ErrCredentialRequired,
		Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}},
	}})
	model := &recordingModel{Model: script(open(rec), answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
	res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
	if res.Status != coordinator.StatusHuman {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	if model.calls != 1 || len(res.Evidence) != 0 {
		t.Errorf("after the credential page: %d model turns, evidence %v", model.calls, res.Evidence)
	}
}

// soFarPages is a browser that proves a long page a chunk at a time (coordinator.SoFar): so far,
// only the first link and field until the page is whole; the rest come with list_links and
// extract_fields.
type soFarPages struct {
	*browsertest.Pages
	whole bool // the page is proven whole
	calls int  // LinksSoFar and FieldsSoFar calls
}

func (b *soFarPages) LinksSoFar(ctx context.Context) ([]browse.Link, bool, error) {
	b.calls++
	ls, err := b.Links(ctx)
	if b.whole {
		return ls, true, err
	}
	return ls[:1], false, err
}

func (b *soFarPages) FieldsSoFar(ctx context.Context) ([]browse.Field, bool, error) {
	b.calls++
	fs, err := b.Fields(ctx)
	if b.whole {
		return fs, true, err
	}
	return fs[:1], false, err
}

// TestPageSoFar: open_url on a browser that proves a long page a chunk at a time hands out the
// fields and links proven so far and says so (fields_and_links_so_far), and the evidence is only
// what was handed out; on a page proven whole it says nothing.
func TestPageSoFar(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0042"
	for _, whole := range []bool{false, true} {
		b := &soFarPages{Pages: browsertest.NewPages(map[string]browsertest.Page{rec: {
			Title:  "SYN-0042",
			Links:  []browse.Link{{Text: "SYN-0001", URL: origin + "/records/SYN-0001"}, {Text: "Registry B", URL: origin + "/sources/b/SYN-0042"}},
			Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}, {Label: "Status", Value: "Active"}},
		}})}
		b.whole = whole
		model := &recordingModel{Model: script(open(rec), answer("SYN-0042", map[string]string{"Record ID": "SYN-0042"}, rec))}
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
		if res.Status != coordinator.StatusAnswered {
			t.Fatalf("whole %v: status %s: %s", whole, res.Status, res.Reason)
		}
		if b.calls != 2 {
			t.Errorf("whole %v: %d calls of LinksSoFar and FieldsSoFar, want 2", whole, b.calls)
		}
		env, err := coordinator.DecodeResult(toolMessages(model.last)[0].Content)
		if err != nil {
			t.Fatal(err)
		}
		data := env["untrusted_page_data"].(map[string]any)
		nl, nf := len(data["links"].([]any)), len(data["fields"].([]any))
		soFar, _ := data["fields_and_links_so_far"].(bool)
		want := 1
		if whole {
			want = 2
		}
		if nl != want || nf != want || soFar == whole {
			t.Errorf("whole %v: %d links, %d fields, so far %v", whole, nl, nf, soFar)
		}
	}
}
