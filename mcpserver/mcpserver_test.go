package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/mcpserver"
	"github.com/browser-agent/browser-agent/policy"
)

const origin = "http://127.0.0.1:8081"

// fake is a server over canned demo pages, in process, with a memory reading the test sets.
type fake struct {
	srv      *mcpserver.Server
	cs       *mcp.ClientSession
	launches atomic.Int32
	closed   atomic.Int32
	mem      atomic.Int64
}

type nopCloser struct{ f *fake }

func (c nopCloser) Close() error { c.f.closed.Add(1); return nil }

func newFake(t *testing.T, limit int64) *fake { return newFakeTime(t, limit, 0) }

func newFakeTime(t *testing.T, limit int64, sessionTime time.Duration) *fake {
	t.Helper()
	pol, err := policy.Parse(demosite.PolicyYAML(origin), "demo policy")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]browsertest.Page{
		origin + "/search?q=SYN-0042": {Title: "Search", Text: "1 result: SYN-0042", Links: []bridge.Link{{N: 1, Text: "SYN-0042", URL: origin + "/records/SYN-0042"}}},
		origin + "/records/SYN-0042": {Title: "SYN-0042", Heading: "SYN-0042", Text: "Record ID SYN-0042 Status Active",
			Fields: []bridge.Field{{Label: "Record ID", Value: "SYN-0042"}, {Label: "Status", Value: "Active"}}},
		origin + "/about": {Title: "About", Text: aboutText},
	}
	f := &fake{}
	f.srv, err = mcpserver.New(mcpserver.Config{
		Policy: pol, MemoryLimit: limit, SessionTime: sessionTime,
		Launch: func(ctx context.Context, _ *policy.Policy) (coordinator.Browser, io.Closer, error) {
			f.launches.Add(1)
			return browsertest.NewPages(pages), nopCloser{f}, nil
		},
		Memory: func(coordinator.Browser) (int64, bool) { return f.mem.Load(), true },
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.srv.Run(ctx, st) }()
	f.cs, err = mcp.NewClient(&mcp.Implementation{Name: "unit", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.cs.Close()
		cancel()
		wg.Wait()
	})
	return f
}

func (f *fake) call(t *testing.T, name, args string) (string, map[string]any) {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	tc, _ := res.Content[0].(*mcp.TextContent)
	return tc.Text, m
}

// aboutText is a page of several chunks (browsertest.DefaultChunk characters each).
var aboutText = strings.Repeat("The registry keeps synthetic records of studies.\n", 200)

// open_url's length is the coordinator's, served as it is: tools/list gives it in open_url's
// schema, a call with it hands out the page's text joined up to length bytes, and a bad one is a
// tool error naming it, nothing opened.
func TestOpenURLLength(t *testing.T) {
	f := newFake(t, -1)
	lt, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name != coordinator.ToolOpenURL {
			continue
		}
		schema, _ := json.Marshal(tool.InputSchema)
		var got struct {
			Properties map[string]struct {
				Type    string
				Minimum int
				Maximum int
			}
		}
		json.Unmarshal(schema, &got)
		if l := got.Properties["length"]; l.Type != "integer" || l.Minimum != 1 || l.Maximum != coordinator.MaxReadLength {
			t.Errorf("open_url's schema: length %+v in %s", l, schema)
		}
	}
	for _, tc := range []struct {
		args       string
		wantLen    int
		wantMore   bool
		wantReason string
	}{
		{`{"url":"` + origin + `/about"}`, browsertest.DefaultChunk, true, ""},
		{`{"url":"` + origin + `/about","length":4500}`, 2 * browsertest.DefaultChunk, true, ""},
		{`{"url":"` + origin + `/about","length":65536}`, len(aboutText), false, ""},
		{`{"url":"` + origin + `/about","length":0}`, 0, false, `argument "length" is out of range 1..65536`},
		{`{"url":"` + origin + `/about","length":"all"}`, 0, false, `argument "length" must be a whole number`},
	} {
		text, m := f.call(t, coordinator.ToolOpenURL, tc.args)
		if tc.wantReason != "" {
			if m["status"] != "refused" || m["rule"] != coordinator.RuleArguments || m["reason"] != tc.wantReason {
				t.Errorf("open_url %s:\n\tgot  %s\n\twant refused, reason %q", tc.args, text, tc.wantReason)
			}
			continue
		}
		data, _ := m["untrusted_page_data"].(map[string]any)
		got, _ := data["text"].(string)
		if m["status"] != "ok" || got != aboutText[:tc.wantLen] || data["next"] != float64(tc.wantLen) || data["more"] != tc.wantMore {
			t.Errorf("open_url %s:\n\tgot  %v, %d characters, next %v, more %v\n\twant ok, %d, more %v",
				tc.args, m["status"], len(got), data["next"], data["more"], tc.wantLen, tc.wantMore)
		}
	}
	if n := f.launches.Load(); n != 1 {
		t.Errorf("browsers launched %d, want 1", n)
	}
}

// A browser session whose processes pass the memory bound is ended before the next call, which
// runs in a new one and says so; below the bound nothing changes.
func TestMemoryBoundRecycles(t *testing.T) {
	const limit = 700 << 20
	f := newFake(t, limit)
	if _, m := f.call(t, "search_site", `{"query":"SYN-0042"}`); m["status"] != "ok" || m[mcpserver.NoteKey] != nil {
		t.Fatalf("first call: %v", m)
	}
	f.mem.Store(limit) // at the bound, not past it
	if _, m := f.call(t, "list_links", `{}`); m["status"] != "ok" || m[mcpserver.NoteKey] != nil {
		t.Fatalf("call at the bound: %v", m)
	}
	f.mem.Store(limit + 1)
	// An answer check keeps the session (and its evidence), and so does a read of the current
	// page (it would find its page gone): the next call that opens a page recycles it.
	if _, m := f.call(t, "check_answer", `{"record_id":"SYN-0042","fields":{"Status":"x"},"sources":["`+origin+`/search?q=SYN-0042"]}`); m[mcpserver.NoteKey] != nil || f.launches.Load() != 1 {
		t.Fatalf("check_answer past the bound recycled the session: %v", m)
	}
	for _, read := range []string{"list_links", "read_page", "extract_fields"} {
		if _, m := f.call(t, read, `{}`); m["status"] != "ok" || m[mcpserver.NoteKey] != nil || f.launches.Load() != 1 {
			t.Fatalf("%s past the bound recycled the session: %v", read, m)
		}
	}
	text, m := f.call(t, "search_site", `{"query":"SYN-0042"}`)
	note, _ := m[mcpserver.NoteKey].(string)
	if !strings.HasPrefix(note, mcpserver.NoteNewSession) || !strings.Contains(note, "past the bound of 700 MiB") {
		t.Errorf("search_site past the memory bound:\n\tgot  %s\n\twant the note that a new browser session started, past the bound", text)
	}
	if m["status"] != "ok" {
		t.Errorf("search_site in the new session: %s", text)
	}
	if n, c := f.launches.Load(), f.closed.Load(); n != 2 || c != 1 {
		t.Errorf("browsers launched %d, closed %d; want 2 and 1", n, c)
	}
	f.mem.Store(0)
	if _, m := f.call(t, "search_site", `{"query":"SYN-0042"}`); m["status"] != "ok" || m[mcpserver.NoteKey] != nil {
		t.Errorf("call after the recycle: %v", m)
	}
	if n := f.launches.Load(); n != 2 {
		t.Errorf("browsers launched %d, want 2", n)
	}
}

// A negative bound turns the recycling off.
func TestMemoryBoundOff(t *testing.T) {
	f := newFake(t, -1)
	f.mem.Store(1 << 40)
	for range 3 {
		if _, m := f.call(t, "search_site", `{"query":"SYN-0042"}`); m[mcpserver.NoteKey] != nil {
			t.Fatalf("a new session without a bound: %v", m)
		}
	}
	if n := f.launches.Load(); n != 1 {
		t.Errorf("browsers launched %d, want 1", n)
	}
}

// Evidence extracted before new_session does not back an answer after it; the same answer was
// answered before.
func TestNewSessionForgetsEvidence(t *testing.T) {
	f := newFake(t, -1)
	f.call(t, "search_site", `{"query":"SYN-0042"}`)
	if _, m := f.call(t, "open_url", `{"url":"/records/SYN-0042"}`); m["status"] != "ok" {
		t.Fatalf("open_url: %v", m)
	}
	f.call(t, "extract_fields", `{}`)
	ans := `{"record_id":"SYN-0042","fields":{"Status":"Active"},"sources":["` + origin + `/records/SYN-0042"]}`
	if text, m := f.call(t, "check_answer", ans); m["status"] != "answered" {
		t.Fatalf("check_answer before new_session: %s", text)
	}
	if text, m := f.call(t, "new_session", `{}`); m["status"] != "ok" {
		t.Fatalf("new_session: %s", text)
	}
	text, m := f.call(t, "check_answer", ans)
	if m["status"] != "blocked" || !strings.Contains(m["reason"].(string), "no fields were extracted") {
		t.Errorf("check_answer after new_session:\n\tgot  %s\n\twant blocked: nothing extracted in this session", text)
	}
	if note, _ := m[mcpserver.NoteKey].(string); !strings.Contains(note, "the client asked for a new session") {
		t.Errorf("check_answer after new_session has no note of the new session: %s", text)
	}
}

// BrowserMemory sums the tree under this process's child that holds the browser's process.
func TestBrowserMemory(t *testing.T) {
	// sh (our child) -> sleep (the "browser"): the tree is sh and sleep.
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	n, ok := mcpserver.BrowserMemory(pidBrowser{pid})
	if !ok || n <= 0 {
		t.Fatalf("BrowserMemory: %d %v", n, ok)
	}
	if own := mcpserver.TreeMemory(os.Getpid()); own <= n {
		t.Errorf("this process's tree (%d bytes) is not larger than its child's (%d)", own, n)
	}
	if _, ok := mcpserver.BrowserMemory(browsertest.NewPages(nil)); ok {
		t.Errorf("BrowserMemory of a browser with no process said ok")
	}
}

type pidBrowser struct{ pid int }

func (p pidBrowser) PID() int                                        { return p.pid }
func (pidBrowser) Open(context.Context, string) (bridge.Page, error) { return bridge.Page{}, nil }
func (pidBrowser) Read(context.Context, int) (bridge.Chunk, error)   { return bridge.Chunk{}, nil }
func (pidBrowser) Links(context.Context) ([]bridge.Link, error)      { return nil, nil }
func (pidBrowser) Fields(context.Context) ([]bridge.Field, error)    { return nil, nil }

// A spent step budget (the demo's max_steps 20) or time budget ends the browser session: the call
// past it is refused, saying the next call starts anew; the next call runs in a new browser
// session with fresh budgets and says so.
func TestSpentBudgetRenews(t *testing.T) {
	f := newFakeTime(t, -1, 400*time.Millisecond)
	for i := 1; i <= 20; i++ {
		f.call(t, "list_links", `{}`)
	}
	text, m := f.call(t, "search_site", `{"query":"SYN-0042"}`)
	if m["rule"] != coordinator.RuleBudget || !strings.HasSuffix(m["reason"].(string), mcpserver.ReasonNextStartsAnew) {
		t.Fatalf("call 21:\n\tgot  %s\n\twant refused by the step budget, saying the next call starts anew", text)
	}
	text, m = f.call(t, "search_site", `{"query":"SYN-0042"}`)
	if note, _ := m[mcpserver.NoteKey].(string); m["status"] != "ok" || !strings.Contains(note, "step budget exhausted (max_steps 20)") {
		t.Fatalf("call 22:\n\tgot  %s\n\twant ok in a new browser session, saying so", text)
	}
	time.Sleep(500 * time.Millisecond)
	text, m = f.call(t, "list_links", `{}`)
	if m["rule"] != coordinator.RuleTimeBudget || !strings.HasSuffix(m["reason"].(string), mcpserver.ReasonNextStartsAnew) {
		t.Fatalf("a call past the time budget:\n\tgot  %s\n\twant refused by the time budget, saying the next call starts anew", text)
	}
	text, m = f.call(t, "search_site", `{"query":"SYN-0042"}`)
	if note, _ := m[mcpserver.NoteKey].(string); m["status"] != "ok" || !strings.Contains(note, "session time budget (400ms) exhausted") {
		t.Fatalf("the call after:\n\tgot  %s\n\twant ok in a new browser session, saying so", text)
	}
	if n, c := f.launches.Load(), f.closed.Load(); n != 3 || c != 2 {
		t.Errorf("browsers launched %d, closed %d; want 3 and 2", n, c)
	}
}
