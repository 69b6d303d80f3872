package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/browser-agent/browser-agent/policy"
)

// OfflineName is the name of the offline planner.
const OfflineName = "offline"

// Offline returns the offline planner: a deterministic model that needs no key and no network. It
// uses the same five tools through the same coordinator, and decides only from the messages it is
// given, as a real model would: search for the task's record, open its page, extract its fields,
// follow its allowed source links under /sources/, extract those, and answer with every field it
// extracted and every page it extracted them from. When a call is denied, refused or fails, it
// answers cannot_answer.
func Offline() Model {
	return ModelFunc{ModelName: OfflineName, F: offlineNext}
}

var reRecordIDInText = regexp.MustCompile(`\bSYN-\d{4}\b`)

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
	url     string
	allowed bool
}

func (c offlineCall) links() []offlineLink {
	ls, _ := c.data()["links"].([]any)
	var out []offlineLink
	for _, l := range ls {
		m, _ := l.(map[string]any)
		u, _ := m["url"].(string)
		ok, _ := m["allowed"].(bool)
		out = append(out, offlineLink{url: u, allowed: ok})
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

func (c offlineCall) recordID() string {
	for _, f := range c.fields() {
		if normLabel(f[0]) == normLabel(LabelRecordID) {
			return strings.ToUpper(normValue(f[1]))
		}
	}
	return ""
}

func offlineNext(ctx context.Context, msgs []Message, _ []ToolSpec) (Turn, error) {
	if err := ctx.Err(); err != nil {
		return Turn{}, err
	}
	id := ""
	for _, m := range msgs {
		if m.Role == RoleUser {
			id = reRecordIDInText.FindString(m.Content)
			break
		}
	}
	if id == "" {
		return offlineFinal(map[string]any{"cannot_answer": "the task names no record ID"}), nil
	}
	// Rebuild the planner's history from the conversation.
	var calls []offlineCall
	index := map[string]int{}
	turns := 0
	for _, m := range msgs {
		switch m.Role {
		case RoleAssistant:
			turns++
			for _, tc := range m.ToolCalls {
				var args map[string]any
				json.Unmarshal(tc.Args, &args)
				index[tc.ID] = len(calls)
				calls = append(calls, offlineCall{name: tc.Name, args: args})
			}
		case RoleTool:
			if i, ok := index[m.ToolCallID]; ok {
				res, _ := DecodeResult(m.Content)
				calls[i].result = res
			}
		}
	}
	call := func(name string, args map[string]any) (Turn, error) {
		b, _ := json.Marshal(args)
		return Turn{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{{
			ID: fmt.Sprintf("offline_%d", turns+1), Name: name, Args: b,
		}}}}, nil
	}
	if len(calls) == 0 {
		return call(ToolSearchSite, map[string]any{"query": id})
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
	if actedOn(last) {
		if u, _ := last.args["url"].(string); u != "" {
			return call(ToolOpenURL, map[string]any{"url": u})
		}
	}

	// Where the record's page is, once found: the first page opened after the search.
	recordPage := -1
	for i, c := range calls {
		if c.name == ToolOpenURL && c.status() == resultOK && !actedOn(c) {
			recordPage = i
			break
		}
	}
	opened := map[string]bool{}
	for _, c := range calls {
		if c.name == ToolOpenURL {
			if u, _ := c.args["url"].(string); u != "" {
				opened[u] = true
			}
		}
	}
	nextSource := func() (string, bool) {
		// Allowed links under /sources/ listed on the record's page, not opened yet.
		for i := recordPage + 1; i < len(calls); i++ {
			if calls[i].name != ToolListLinks || calls[i].status() != resultOK {
				continue
			}
			for _, l := range calls[i].links() {
				if !l.allowed || opened[l.url] {
					continue
				}
				if u, err := policy.ParseURL(l.url, ""); err == nil && strings.HasPrefix(u.Path(), "/sources/") {
					return l.url, true
				}
			}
			break
		}
		return "", false
	}

	switch last.name {
	case ToolSearchSite:
		return call(ToolListLinks, map[string]any{})
	case ToolListLinks:
		if recordPage < 0 {
			for _, l := range last.links() {
				if !l.allowed {
					continue
				}
				if u, err := policy.ParseURL(l.url, ""); err == nil && strings.EqualFold(u.Path(), "/records/"+id) {
					return call(ToolOpenURL, map[string]any{"url": l.url})
				}
			}
			return offlineFinal(map[string]any{"cannot_answer": "the search found no page for " + id}), nil
		}
		if u, ok := nextSource(); ok {
			return call(ToolOpenURL, map[string]any{"url": u})
		}
		return offlineAnswer(id, calls), nil
	case ToolOpenURL, ToolReadPage:
		return call(ToolExtractFields, map[string]any{})
	case ToolExtractFields:
		listed := false
		for i := recordPage + 1; i < len(calls); i++ {
			listed = listed || calls[i].name == ToolListLinks
		}
		if !listed {
			return call(ToolListLinks, map[string]any{})
		}
		if u, ok := nextSource(); ok {
			return call(ToolOpenURL, map[string]any{"url": u})
		}
		return offlineAnswer(id, calls), nil
	}
	return offlineFinal(map[string]any{"cannot_answer": "unexpected state after " + last.name}), nil
}

// offlineAnswer claims every field extracted from pages about the record, each label's value from
// the first page that had it, and cites every such page.
func offlineAnswer(id string, calls []offlineCall) Turn {
	fields := map[string]string{}
	var sources []string
	for _, c := range calls {
		if c.name != ToolExtractFields || c.status() != resultOK || c.recordID() != id {
			continue
		}
		sources = append(sources, c.source())
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

func offlineFinal(v map[string]any) Turn {
	b, _ := json.Marshal(v)
	return Turn{Message: Message{Role: RoleAssistant, Content: string(b)}}
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
	return c.status() == resultOK && strings.HasPrefix(why, ReasonPersonActed)
}
