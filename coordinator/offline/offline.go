// Package offline is the offline planner: a deterministic coordinator.Model that needs no key and
// no network. It knows no site: it works on any site whose policy has a search route and whose
// search results link to the record's page.
package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
)

// Name is the name of the offline planner.
const Name = "offline"

// New returns the offline planner. It uses the same five tools through the same coordinator, and
// decides only from the messages it is given, as a real model would: it searches for the task's
// record, opens the first allowed result that names the record (in its URL path, else in its
// text), follows the allowed links of that page whose URL path names the record, and answers with
// every field of every page it opened that names the record (as a field value, in its title or on
// the first line of its text), citing those pages. The fields and links come with each page
// (open_url and search_site give them); it asks list_links only when a page has more allowed links
// than its result holds, and extract_fields only for a page whose result had no fields. When a
// call is denied, refused or fails, it answers cannot_answer.
func New() coordinator.Model {
	return coordinator.ModelFunc{ModelName: Name, F: next}
}

// resultOK is the status of a tool result that succeeded.
const resultOK = "ok"

// offlineCall is one of the planner's past calls and its result.
type offlineCall struct {
	name   string
	args   map[string]any
	result map[string]any // nil when no result came back
}

func (c offlineCall) status() string { s, _ := c.result["status"].(string); return s }
func (c offlineCall) source() string { s, _ := c.result["source"].(string); return s }

func (c offlineCall) data() map[string]any {
	d, _ := c.result["untrusted_page_data"].(map[string]any)
	return d
}

type offlineLink struct {
	n         int
	url, text string
	allowed   bool
}

// hasFields reports whether a call's result carries the page's fields.
func (c offlineCall) hasFields() bool { _, ok := c.data()["fields"]; return ok }

// moreLinks is the number of allowed links a page's result left to list_links.
func (c offlineCall) moreLinks() int { n, _ := c.data()["more_links"].(float64); return int(n) }

// page reports whether a call opened a page (and so carries its text, fields and links).
func (c offlineCall) page() bool {
	return (c.name == coordinator.ToolOpenURL || c.name == coordinator.ToolSearchSite) && c.status() == resultOK && !actedOn(c)
}

func (c offlineCall) links() []offlineLink {
	ls, _ := c.data()["links"].([]any)
	var out []offlineLink
	for _, l := range ls {
		m, _ := l.(map[string]any)
		u, _ := m["url"].(string)
		t, _ := m["text"].(string)
		n, _ := m["n"].(float64)
		ok, verdict := m["allowed"].(bool)
		if !verdict {
			ok = true // a page's result gives allowed links only
		}
		out = append(out, offlineLink{n: int(n), url: u, text: t, allowed: ok})
	}
	return out
}

func (c offlineCall) fields() [][2]string {
	fs, _ := c.data()["fields"].([]any)
	var out [][2]string
	for _, f := range fs {
		m, _ := f.(map[string]any)
		l, _ := m["label"].(string)
		v, _ := m["value"].(string)
		out = append(out, [2]string{l, v})
	}
	return out
}

// names reports whether the page a call read names the record id: a field's whole value is id,
// or the page's title or the first line of its text (where a heading sits) holds id as a word.
func (c offlineCall) names(id string, opened offlineCall) bool {
	for _, f := range c.fields() {
		if strings.EqualFold(strings.Join(strings.Fields(f[1]), " "), id) {
			return true
		}
	}
	title, _ := opened.data()["title"].(string)
	text, _ := opened.data()["text"].(string)
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return hasWord(title, id) || hasWord(first, id)
}

// hasWord reports whether s holds w, case folded, with no letter, digit or _ either side.
func hasWord(s, w string) bool {
	ls, lw := strings.ToLower(s), strings.ToLower(w)
	for i := 0; lw != "" && i+len(lw) <= len(ls); {
		j := strings.Index(ls[i:], lw)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lw)
		if (start == 0 || !wordByte(ls[start-1])) && (end == len(ls) || !wordByte(ls[end])) {
			return true
		}
		i = start + 1
	}
	return false
}

func wordByte(b byte) bool {
	return b == '_' || b >= 0x80 || unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b))
}

// namesInPath reports whether one segment of the URL's path is id, case folded.
func namesInPath(raw, id string) bool {
	u, err := policy.ParseURL(raw, "")
	if err != nil {
		return false
	}
	for _, seg := range strings.Split(u.Path(), "/") {
		if strings.EqualFold(seg, id) {
			return true
		}
	}
	return false
}

// next is the planner's turn, with its usage counted as a chat model would be billed for it: the
// whole conversation and the tool specs in, the reply out.
func next(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
	t, err := plan(ctx, msgs)
	if err != nil {
		return t, err
	}
	t.Usage.PromptTokens = coordinator.PromptTokens(msgs, tools)
	t.Usage.CompletionTokens = coordinator.OutputTokens(t.Message)
	return t, nil
}

func plan(ctx context.Context, msgs []coordinator.Message) (coordinator.Turn, error) {
	if err := ctx.Err(); err != nil {
		return coordinator.Turn{}, err
	}
	id := coordinator.RecordOf(msgs)
	if id == "" {
		return offlineFinal(map[string]any{"cannot_answer": "the task names no record ID"}), nil
	}
	// Rebuild the planner's history from the conversation.
	var calls []offlineCall
	index := map[string]int{}
	turns := 0
	for _, m := range msgs {
		switch m.Role {
		case coordinator.RoleAssistant:
			turns++
			for _, tc := range m.ToolCalls {
				var args map[string]any
				json.Unmarshal(tc.Args, &args)
				index[tc.ID] = len(calls)
				calls = append(calls, offlineCall{name: tc.Name, args: args})
			}
		case coordinator.RoleTool:
			if i, ok := index[m.ToolCallID]; ok {
				res, _ := coordinator.DecodeResult(m.Content)
				calls[i].result = res
			}
		}
	}
	call := func(name string, args map[string]any) (coordinator.Turn, error) {
		b, _ := json.Marshal(args)
		return coordinator.Turn{Message: coordinator.Message{Role: coordinator.RoleAssistant, ToolCalls: []coordinator.ToolCall{{
			ID: fmt.Sprintf("offline_%d", turns+1), Name: name, Args: b,
		}}}}, nil
	}
	if len(calls) == 0 {
		return call(coordinator.ToolSearchSite, map[string]any{"query": id})
	}
	last := calls[len(calls)-1]
	if last.status() != resultOK {
		why, _ := last.result["reason"].(string)
		if why == "" {
			why = "no result"
		}
		return offlineFinal(map[string]any{"cannot_answer": fmt.Sprintf("%s was %s: %s", last.name, orDefault(last.status(), "not answered"), why)}), nil
	}

	// A person took over at a sign-in page and handed the browser back: open that page again.
	// The call may have named a link by its number: its result names the URL it opened, which
	// that listing presented to the run.
	if actedOn(last) {
		u, _ := last.args["url"].(string)
		if u == "" {
			u, _ = last.result["url"].(string)
		}
		if u != "" {
			return call(coordinator.ToolOpenURL, map[string]any{"url": u})
		}
	}

	// Where the record's page is, once found: the first page opened after the search.
	recordPage := -1
	for i, c := range calls {
		if c.name == coordinator.ToolOpenURL && c.page() {
			recordPage = i
			break
		}
	}
	opened := map[string]bool{}
	for _, c := range calls {
		if c.name == coordinator.ToolOpenURL {
			if u, _ := c.args["url"].(string); u != "" {
				opened[u] = true
			}
			if c.page() {
				opened[c.source()] = true
			}
		}
	}
	// open opens l: by its number while the last call's result is the one that listed it, else by
	// its URL (which that listing presented to the run).
	open := func(l offlineLink, fromLast bool) (coordinator.Turn, error) {
		if fromLast && l.n > 0 {
			return call(coordinator.ToolOpenURL, map[string]any{"link": l.n})
		}
		return call(coordinator.ToolOpenURL, map[string]any{"url": l.url})
	}
	// A page whose result came without its fields: extract them.
	if last.page() && !last.hasFields() {
		return call(coordinator.ToolExtractFields, map[string]any{})
	}
	if recordPage < 0 {
		// The search's results: the first allowed one whose path names the record, else whose
		// text does.
		if last.name != coordinator.ToolSearchSite && last.name != coordinator.ToolListLinks {
			return offlineFinal(map[string]any{"cannot_answer": "unexpected state after " + last.name}), nil
		}
		for _, byText := range []bool{false, true} {
			for _, l := range last.links() {
				if l.allowed && (!byText && namesInPath(l.url, id) || byText && hasWord(l.text, id)) {
					return open(l, true)
				}
			}
		}
		if last.name == coordinator.ToolSearchSite && last.moreLinks() > 0 {
			return call(coordinator.ToolListLinks, map[string]any{})
		}
		return offlineFinal(map[string]any{"cannot_answer": "the search found no page for " + id}), nil
	}
	// The record's page's other sources: its allowed links whose path names the record, from its
	// result and from a list_links made on it, not opened yet.
	listedHere := false
	for i := recordPage; i < len(calls); i++ {
		c := calls[i]
		if i > recordPage && c.name != coordinator.ToolListLinks {
			if c.name != coordinator.ToolExtractFields {
				break
			}
			continue
		}
		listedHere = listedHere || c.name == coordinator.ToolListLinks
		for _, l := range c.links() {
			if l.allowed && !opened[l.url] && l.url != calls[recordPage].source() && namesInPath(l.url, id) {
				return open(l, i == len(calls)-1)
			}
		}
	}
	if !listedHere && calls[recordPage].moreLinks() > 0 && calls[len(calls)-1].source() == calls[recordPage].source() {
		// More links than the page's result held, and the browser is still on it.
		return call(coordinator.ToolListLinks, map[string]any{})
	}
	return offlineAnswer(id, calls), nil
}

// offlineAnswer claims every field extracted from pages that name the record, each label's value
// from the first page that had it, and cites every such page.
func offlineAnswer(id string, calls []offlineCall) coordinator.Turn {
	fields := map[string]string{}
	var sources []string
	opened := map[string]offlineCall{}
	for _, c := range calls {
		if c.name == coordinator.ToolOpenURL && c.status() == resultOK {
			opened[c.source()] = c
		}
	}
	cited := map[string]bool{}
	for _, c := range calls {
		// The pages opened (the search's results page lists records; it is not one) and extract_fields.
		if c.name == coordinator.ToolSearchSite || !c.hasFields() || c.status() != resultOK ||
			len(c.fields()) == 0 || !c.names(id, opened[c.source()]) {
			continue
		}
		if !cited[c.source()] {
			cited[c.source()] = true
			sources = append(sources, c.source())
		}
		for _, f := range c.fields() {
			if _, seen := fields[f[0]]; !seen && strings.TrimSpace(f[0]) != "" {
				fields[f[0]] = f[1]
			}
		}
	}
	if len(fields) == 0 {
		return offlineFinal(map[string]any{"cannot_answer": "no page about " + id + " had fields"})
	}
	return offlineFinal(map[string]any{"record_id": id, "fields": fields, "sources": sources})
}

func offlineFinal(v map[string]any) coordinator.Turn {
	b, _ := json.Marshal(v)
	return coordinator.Turn{Message: coordinator.Message{Role: coordinator.RoleAssistant, Content: string(b)}}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// actedOn reports whether a call's result says a person took over the page (a sign-in handoff).
func actedOn(c offlineCall) bool {
	why, _ := c.result["reason"].(string)
	return c.status() == resultOK && strings.HasPrefix(why, coordinator.ReasonPersonActed)
}
