package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/mcpserver"
	"github.com/browser-agent/browser-agent/policy"
)

// sevenTools: the five read tools, check_answer, and new_session (which ends the browser session).
var sevenTools = []string{"search_site", "open_url", "read_page", "list_links", "extract_fields", "check_answer", "new_session"}

// checkTools asserts tools/list: exactly the seven tools, each read-only, with the coordinator's
// argument schemas (new_session takes none).
func checkTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	specs := map[string]json.RawMessage{}
	// The server runs under the embedded demo policy: the tools' record example is its.
	pol, err := policy.Parse(demosite.PolicyYAML("http://127.0.0.1:8081"), "demo policy")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range coordinator.Tools(pol) {
		specs[s.Name] = s.Parameters
	}
	specs[coordinator.ToolCheckAnswer] = coordinator.CheckAnswerSpec(pol).Parameters
	specs[mcpserver.ToolNewSession] = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s: readOnlyHint is not true: %+v", tool.Name, tool.Annotations)
		}
		if tool.Annotations != nil && (tool.Annotations.DestructiveHint == nil || *tool.Annotations.DestructiveHint) {
			t.Errorf("tool %s: destructiveHint is not false", tool.Name)
		}
		got, _ := json.Marshal(tool.InputSchema)
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal(specs[tool.Name], &b)
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if !bytes.Equal(ga, gb) {
			t.Errorf("tool %s: input schema:\n\tgot  %s\n\twant %s (the coordinator's)", tool.Name, ga, gb)
		}
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
	}
	if !slices.Equal(names, sevenTools) && !sameSet(names, sevenTools) {
		t.Errorf("tools/list:\n\tgot  %v\n\twant exactly %v", names, sevenTools)
	}
	// Nothing else: no resources (page content only ever leaves in a tool result), no prompts.
	caps := cs.InitializeResult().Capabilities
	if caps.Resources != nil || caps.Prompts != nil {
		t.Errorf("capabilities: resources %+v, prompts %+v; want neither", caps.Resources, caps.Prompts)
	}
	if r, err := cs.ListResources(ctx, nil); err == nil && len(r.Resources) > 0 {
		t.Errorf("resources/list: %d resources, want none", len(r.Resources))
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func untrusted(m map[string]any) map[string]any {
	u, _ := m["untrusted_page_data"].(map[string]any)
	return u
}

// exercise drives every tool against the demo site through one session and returns the site's
// origin.
func exercise(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	// read_page before any page: refused, nothing opened.
	res, m := call(t, cs, "read_page", `{}`)
	if !res.IsError || str(m, "reason") != coordinator.ReasonNoPage {
		t.Errorf("read_page with no page:\n\tgot  %v %v\n\twant a tool error %q", res.IsError, m, coordinator.ReasonNoPage)
	}
	res, m = call(t, cs, "search_site", `{"query":"SYN-0042"}`)
	if res.IsError || str(m, "status") != "ok" {
		t.Fatalf("search_site: %s", text(res))
	}
	if !strings.HasPrefix(text(res), coordinator.ResultPreface+"\n") {
		t.Errorf("search_site text does not start with the coordinator's preface: %.200q", text(res))
	}
	origin := strings.SplitN(str(m, "source"), "/search", 2)[0]
	if !strings.HasPrefix(origin, "http://127.0.0.1:") {
		t.Fatalf("search_site source %q is not the demo site", str(m, "source"))
	}
	res, m = call(t, cs, "list_links", ``)
	if res.IsError {
		t.Fatalf("list_links: %s", text(res))
	}
	links, _ := untrusted(m)["links"].([]any)
	found := false
	for _, l := range links {
		lm, _ := l.(map[string]any)
		if str(lm, "url") == origin+"/records/SYN-0042" && lm["allowed"] == true {
			found = true
		}
	}
	if !found {
		t.Errorf("list_links: no allowed link to the record among %d links", len(links))
	}
	rec := origin + "/records/SYN-0042"
	res, m = call(t, cs, "open_url", `{"url":"/records/SYN-0042"}`)
	if res.IsError || str(m, "source") != rec {
		t.Fatalf("open_url: %s", text(res))
	}
	if u := untrusted(m); u == nil || !strings.Contains(str(u, "text"), "SYN-0042") {
		t.Errorf("open_url: the page text is not under untrusted_page_data: %v", m)
	}
	// With length, the page's text as far as it fits: the record page whole, its fields with it.
	res, m = call(t, cs, "open_url", `{"url":"/records/SYN-0042","length":65536}`)
	if u := untrusted(m); res.IsError || u["more"] != false || !strings.Contains(str(u, "text"), "SYN-0042") || len(u["fields"].([]any)) == 0 {
		t.Errorf("open_url with length: %s", text(res))
	}
	res, m = call(t, cs, "read_page", `{"offset":0}`)
	if res.IsError || !strings.Contains(str(untrusted(m), "text"), "SYN-0042") {
		t.Errorf("read_page: %s", text(res))
	}
	res, m = call(t, cs, "extract_fields", `{}`)
	if res.IsError {
		t.Fatalf("extract_fields: %s", text(res))
	}
	fields := map[string]string{}
	fl, _ := untrusted(m)["fields"].([]any)
	for _, f := range fl {
		fm, _ := f.(map[string]any)
		fields[str(fm, "label")] = str(fm, "value")
	}
	if fields["Record ID"] != "SYN-0042" || fields["Status"] == "" {
		t.Fatalf("extract_fields: %v", fields)
	}
	// The evidence check: a value extracted here is answered; a made-up one is not.
	ans, _ := json.Marshal(map[string]any{"record_id": "SYN-0042", "fields": map[string]string{"Status": fields["Status"]}, "sources": []string{rec}})
	res, m = call(t, cs, "check_answer", string(ans))
	if res.IsError || str(m, "status") != "answered" {
		t.Errorf("check_answer with extracted evidence:\n\tgot  %s\n\twant answered", text(res))
	}
	if ev, _ := untrusted(m)["evidence"].([]any); len(ev) == 0 {
		t.Errorf("check_answer gave no evidence: %v", m)
	}
	res, m = call(t, cs, "check_answer", `{"record_id":"SYN-0042","fields":{"Status":"Made Up"},"sources":["`+rec+`"]}`)
	if str(m, "status") != "blocked" || !strings.Contains(str(m, "reason"), "unsupported answer") {
		t.Errorf("check_answer with a made-up value:\n\tgot  %s\n\twant blocked, unsupported answer", text(res))
	}
	return origin
}

// argRefusals checks bad arguments and unknown tools (15 steps).
func argRefusals(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	for _, tc := range []struct{ tool, args, reason string }{
		{"open_url", `{"url":5}`, `argument "url" must be a string`},
		{"open_url", `{"URL":"/"}`, `unknown argument "URL"`},
		{"open_url", `{}`, `missing argument "url"`},
		{"open_url", `{"url":"/records/SYN-0042","length":0}`, `argument "length" is out of range 1..65536`},
		{"search_site", `{"query":"x","query":"y"}`, `argument "query" given twice`},
		{"search_site", `{"query":"` + strings.Repeat("a", 201) + `"}`, `longer than 200 characters`},
		{"read_page", `{"offset":-1}`, `out of range`},
		{"list_links", `{"selector":"a"}`, `unknown argument "selector": this tool takes no arguments`},
		{"extract_fields", `[1]`, `must be a JSON object`},
		{"check_answer", `{"record_id":"SYN-0042","fields":{},"sources":[]}`, `fields must name at least one field`},
		{"check_answer", `{"record_id":"SYN-42","fields":{"a":"b"},"sources":["x"]}`, `malformed record ID`},
		{"check_answer", `{"record_id":"SYN-0042","fields":{"a":"b"},"sources":["x"],"cannot_answer":"x"}`, `unknown argument "cannot_answer"`},
	} {
		res, m := call(t, cs, tc.tool, tc.args)
		if !res.IsError || str(m, "rule") != coordinator.RuleArguments || !strings.Contains(str(m, "reason"), tc.reason) {
			t.Errorf("%s %.60s:\n\tgot  error=%v %v\n\twant a tool error, rule %q, reason containing %q", tc.tool, tc.args, res.IsError, m, coordinator.RuleArguments, tc.reason)
		}
	}
	// An unknown tool is a protocol error that names it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"browser_evaluate", "click", "Open_URL"} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") || !strings.Contains(err.Error(), name) {
			t.Errorf("unknown tool %s:\n\tgot  %v\n\twant an error naming the unknown tool", name, err)
		}
	}
}

// denials checks policy denials and the credential page (5 steps).
func denials(t *testing.T, cs *mcp.ClientSession, origin string) {
	t.Helper()
	// Denials are tool errors naming the rule or the reason.
	for _, tc := range []struct{ url, reason string }{
		{origin + "/records/SYN-0042/delete", "write"},
		{"http://example.com/", "not allowed"},
		{origin + "/admin", ""},
	} {
		res, m := call(t, cs, "open_url", `{"url":"`+tc.url+`"}`)
		if !res.IsError || str(m, "status") != "denied" || str(m, "reason") == "" || !strings.Contains(str(m, "reason"), tc.reason) {
			t.Errorf("open_url %s:\n\tgot  error=%v %v\n\twant a denial whose reason contains %q", tc.url, res.IsError, m, tc.reason)
		}
	}
	// The sign-in page: human action required, nothing from the page.
	res, m := call(t, cs, "open_url", `{"url":"/login"}`)
	if !res.IsError || str(m, "status") != string(coordinator.StatusHuman) || !strings.Contains(text(res), "human action required") {
		t.Errorf("open_url /login:\n\tgot  %s\n\twant human action required", text(res))
	}
	// The refusal names the field in the bridge's own words (its kind and input type); nothing of
	// the page's own text: its heading, its prose, the demo credential.
	if _, ok := m["untrusted_page_data"]; ok || strings.Contains(text(res), "registry staff") || strings.Contains(text(res), "synthetic-demo") ||
		strings.Contains(text(res), "Sign in ·") {
		t.Errorf("open_url /login returned page data: %s", text(res))
	}
	res, m = call(t, cs, "read_page", `{}`)
	if !res.IsError || str(m, "reason") != coordinator.ReasonNoPage {
		t.Errorf("read_page after the sign-in page:\n\tgot  %s\n\twant %q", text(res), coordinator.ReasonNoPage)
	}
}

// auditRuns reads the audit store through "browser-agent audit --json".
// runsAfterClose closes the client's session, waits for the stdio server to exit and returns the
// audit's runs, failing t unless there are want.
func runsAfterClose(t *testing.T, cs *mcp.ClientSession, srv *server, want int) []map[string]any {
	t.Helper()
	cs.Close()
	srv.cmd.Wait()
	runs := auditRuns(t, srv.db)
	if len(runs) != want {
		t.Fatalf("audit: %d runs, want %d: %v", len(runs), want, runs)
	}
	return runs
}

func auditRuns(t *testing.T, db string) []map[string]any {
	t.Helper()
	out, err := exec.Command(binary, "audit", "--json", "--db", db).Output()
	if err != nil {
		t.Fatalf("browser-agent audit: %v", err)
	}
	var v struct{ Runs []map[string]any }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("audit --json: %v: %s", err, out)
	}
	return v.Runs
}

func TestStdio(t *testing.T) {
	cs, srv := stdioClient(t, "go-sdk-test-client")
	if r := cs.InitializeResult(); r == nil || r.ServerInfo == nil || r.ServerInfo.Name != "browser-agent" {
		t.Fatalf("initialize: %+v", r)
	}
	if !strings.Contains(srv.stderr.String(), "no --policy: serving the embedded demo site") {
		t.Errorf("stderr does not say the demo site is served:\n%s", srv.stderr)
	}
	checkTools(t, cs)
	origin := exercise(t, cs)
	denials(t, cs, origin)
	cs.Close()
	done := make(chan error, 1)
	go func() { done <- srv.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not exit after the client closed stdin")
	}
	runs := auditRuns(t, srv.db)
	if len(runs) != 1 {
		t.Fatalf("audit: got %d runs, want 1: %v", len(runs), runs)
	}
	r := runs[0]
	if r["kind"] != "mcp" || r["client"] != "go-sdk-test-client 0.0.1-test" || r["finished_at"] == nil || r["status"] == "running" {
		t.Errorf("audit run:\n\tgot  %v\n\twant kind mcp, client \"go-sdk-test-client 0.0.1-test\", finished", r)
	}
	// Metadata only: the field values and page text are not in the store.
	out, _ := exec.Command(binary, "audit", "--json", "--db", srv.db, str(r, "id")).Output()
	for _, want := range []string{`"tool":"open_url"`, `"tool":"check_answer"`, `"tool":"request"`, `"verdict":"deny"`, `"kind":"mcp"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("audit of the run lacks %s", want)
		}
	}
	if strings.Contains(string(out), "Made Up") {
		t.Errorf("audit holds a claimed value")
	}
}

// Bad arguments and unknown tools are refused with clear errors, and the session's step budget
// (the policy's max_steps, 20 for the demo) holds.
func TestStdioRefusalsAndBudget(t *testing.T) {
	cs, srv := stdioClient(t, "go-sdk-test-client")
	argRefusals(t, cs) // 12 refused calls and 3 unknown tools, each a step as in a run
	for i := 16; i <= 20; i++ {
		if res, m := call(t, cs, "list_links", `{}`); str(m, "reason") != coordinator.ReasonNoPage {
			t.Fatalf("call %d: %s", i, text(res))
		}
	}
	res, m := call(t, cs, "search_site", `{"query":"SYN-0042"}`)
	if !res.IsError || str(m, "rule") != coordinator.RuleBudget || !strings.HasSuffix(str(m, "reason"), mcpserver.ReasonNextStartsAnew) {
		t.Errorf("call 21 of a session with max_steps 20:\n\tgot  %s\n\twant refused by the step budget, saying the next call starts anew", text(res))
	}
	if _, ok := m[mcpserver.NoteKey]; ok {
		t.Errorf("call 21 carries a new-session note: %s", text(res))
	}
	// The spent budget ended the browser session, not the server: call 22 runs in a new one.
	res, m = call(t, cs, "search_site", `{"query":"SYN-0042"}`)
	if res.IsError || str(m, "status") != "ok" {
		t.Fatalf("call 22, after the step budget ended the browser session:\n\tgot  %s\n\twant ok", text(res))
	}
	checkNote(t, res, m, "step budget exhausted (max_steps 20)")
	runs := auditRuns(t, srv.db)
	if len(runs) != 2 {
		t.Fatalf("audit: %d runs, want 2 (the spent one and the new one): %v", len(runs), runs)
	}
	spent := runWith(t, runs, "step budget exhausted")
	if spent == nil || spent["finished_at"] == nil || str(spent, "status") != "blocked" {
		t.Fatalf("audit: no finished run, blocked, ended by the step budget: %v", runs)
	}
	out, _ := exec.Command(binary, "audit", "--json", "--db", srv.db, str(spent, "id")).Output()
	var steps struct{ Steps []map[string]any }
	json.Unmarshal(out, &steps)
	if len(steps.Steps) != 21 {
		t.Errorf("audit: %d steps, want 21 (every call, the refused ones too)", len(steps.Steps))
	}
	// A tool name the client made up is not stored as it was written (a chosen string, issue 11).
	if strings.Contains(string(out), "browser_evaluate") {
		t.Errorf("audit of the run holds the made-up tool name browser_evaluate")
	}
	for _, want := range []string{`"tool":"(unknown tool)"`, `"reason":"unknown tool"`, `"rule":"step budget"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("audit of the run lacks %s", want)
		}
	}
}

func TestHTTP(t *testing.T) {
	srv := httpServer(t, nil)
	a := httpClient(t, srv, "client-a", "")
	b := httpClient(t, srv, "client-b", "")
	checkTools(t, a)
	origin := exercise(t, a)
	// Session b shares nothing with a: no page, no evidence.
	res, m := call(t, b, "read_page", `{}`)
	if !res.IsError || str(m, "reason") != coordinator.ReasonNoPage {
		t.Errorf("session b read_page:\n\tgot  %s\n\twant no page open (a's page is not b's)", text(res))
	}
	ans := `{"record_id":"SYN-0042","fields":{"Record ID":"SYN-0042"},"sources":["` + origin + `/records/SYN-0042"]}`
	res, m = call(t, b, "check_answer", ans)
	if str(m, "status") != "blocked" || !strings.Contains(str(m, "reason"), "no fields were extracted") {
		t.Errorf("session b check_answer with a's evidence:\n\tgot  %s\n\twant blocked: no fields extracted in this session", text(res))
	}
	res, m = call(t, a, "check_answer", ans)
	if str(m, "status") != "answered" {
		t.Errorf("session a check_answer:\n\tgot  %s\n\twant answered", text(res))
	}
	argRefusals(t, b)
	a.Close()
	b.Close()
	if !testutil.Eventually(60*time.Second, func() bool {
		runs := auditRuns(t, srv.db)
		if len(runs) != 2 {
			return false
		}
		for _, r := range runs {
			if r["finished_at"] == nil || r["kind"] != "mcp" {
				return false
			}
		}
		return true
	}) {
		t.Errorf("audit after two sessions: want two finished mcp runs, one per session: %v", auditRuns(t, srv.db))
	}
	clients := []string{}
	for _, r := range auditRuns(t, srv.db) {
		clients = append(clients, str(r, "client"))
	}
	if !sameSet(clients, []string{"client-a 0.0.1-test", "client-b 0.0.1-test"}) {
		t.Errorf("audit clients: %v", clients)
	}
	if !testutil.Eventually(30*time.Second, func() bool { return strings.Count(srv.stderr.String(), "browser closed") == 2 }) {
		t.Errorf("want two browsers started and closed, one per session:\n%s", srv.stderr)
	}
	if n := strings.Count(srv.stderr.String(), "browser started"); n != 2 {
		t.Errorf("browsers started: got %d, want 2", n)
	}
}

// The HTTP transport refuses a foreign Origin, a missing or wrong token, and a non-loopback
// listener without a token.
func TestHTTPGuards(t *testing.T) {
	const token = "test-token-0123456789abcdef"
	srv := httpServer(t, []string{"BROWSER_AGENT_MCP_TOKEN=" + token})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest("POST", srv.url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	auth := "Bearer " + token
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, 403},
		{"rebinding host", map[string]string{"Authorization": auth, "Host": "evil.example"}, 403},
		{"token", map[string]string{"Authorization": auth}, 200},
	} {
		if got := post(tc.hdr); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	cs := httpClient(t, srv, "token-client", token)
	checkTools(t, cs)

	// Beyond loopback without a token: refused before listening.
	cmd := exec.Command(binary, "mcp", "--http", "0.0.0.0:0")
	cmd.Env = binEnv(t.TempDir(), "BROWSER_AGENT_MCP_TOKEN=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "BROWSER_AGENT_MCP_TOKEN") {
		t.Errorf("mcp --http 0.0.0.0:0 without a token:\n\tgot  %v: %s\n\twant exit 2 naming BROWSER_AGENT_MCP_TOKEN", err, out)
	}
}

func TestHelpListsMCP(t *testing.T) {
	out, _ := exec.Command(binary, "help").Output()
	if !strings.Contains(string(out), "mcp ") {
		t.Errorf("help does not list mcp: %s", out)
	}
}
