package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/mcpserver"
)

// checkNote asserts that a result says a new browser session started because the last one ended
// for why: first in its JSON text, and in its structuredContent.
func checkNote(t *testing.T, res *mcp.CallToolResult, m map[string]any, why string) {
	t.Helper()
	note := str(m, mcpserver.NoteKey)
	if !strings.HasPrefix(note, mcpserver.NoteNewSession) || !strings.Contains(note, why) {
		t.Errorf("result of the first call of a new browser session:\n\tgot  %s\n\twant %q first, saying %q and why the last one ended (%q)", text(res), mcpserver.NoteKey, mcpserver.NoteNewSession, why)
	}
	if !strings.HasPrefix(text(res), coordinator.ResultPreface+"\n{\""+mcpserver.NoteKey+"\":") {
		t.Errorf("the note is not first in the result's JSON text: %.300q", text(res))
	}
}

// runWith is the audit run whose reason contains s, or nil.
func runWith(t *testing.T, runs []map[string]any, s string) map[string]any {
	t.Helper()
	for _, r := range runs {
		if strings.Contains(str(r, "reason"), s) {
			return r
		}
	}
	return nil
}

// spendSteps makes the 20 calls of the demo policy's step budget (list_links with no page open:
// refused by the coordinator, no browser work), then call 21, which the budget refuses and which
// ends the browser session.
func spendSteps(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	for i := 1; i <= 20; i++ {
		if res, m := call(t, cs, "list_links", `{}`); str(m, "reason") != coordinator.ReasonNoPage {
			t.Fatalf("call %d: %s", i, text(res))
		}
	}
	res, m := call(t, cs, "read_page", `{}`)
	if !res.IsError || str(m, "rule") != coordinator.RuleBudget || !strings.Contains(str(m, "reason"), mcpserver.ReasonNextStartsAnew) {
		t.Fatalf("call 21 of a session with max_steps 20:\n\tgot  %s\n\twant refused by the step budget, saying the next call starts anew", text(res))
	}
}

// spendTime waits out a session time budget of d that started at the first call of a browser
// session (started: when that call returned, after the budget began), then makes a call, which the time budget refuses and which ends the browser session.
func spendTime(t *testing.T, cs *mcp.ClientSession, started time.Time, d time.Duration) {
	t.Helper()
	time.Sleep(time.Until(started.Add(d + 200*time.Millisecond)))
	res, m := call(t, cs, "list_links", `{}`)
	if !res.IsError || str(m, "rule") != coordinator.RuleTimeBudget || !strings.Contains(str(m, "reason"), mcpserver.ReasonNextStartsAnew) {
		t.Fatalf("a call past the session time budget:\n\tgot  %s\n\twant refused by the time budget, saying the next call starts anew", text(res))
	}
}

// searchOK is a search_site that must work.
func searchOK(t *testing.T, cs *mcp.ClientSession) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, m := call(t, cs, "search_site", `{"query":"SYN-0042"}`)
	if res.IsError || str(m, "status") != "ok" {
		t.Fatalf("search_site:\n\tgot  %s\n\twant ok", text(res))
	}
	return res, m
}

// A spent time budget ends the browser session, not the server: the call past it is refused,
// saying the next call starts anew; the next call works in a new browser session and says so; the
// audit has both runs.
func TestStdioSessionTimeRenews(t *testing.T) {
	const budget = 6 * time.Second
	cs, srv := stdioClient(t, "go-sdk-test-client", "--session-time", budget.String())
	res, m := searchOK(t, cs)
	if _, ok := m[mcpserver.NoteKey]; ok {
		t.Errorf("the first browser session's first result carries a new-session note: %s", text(res))
	}
	spendTime(t, cs, time.Now(), budget)
	res, m = searchOK(t, cs)
	checkNote(t, res, m, "session time budget ("+budget.String()+") exhausted")
	// The new session has fresh budgets: it is not refused on its second call.
	if res, m := call(t, cs, "list_links", `{}`); res.IsError {
		t.Errorf("second call of the new browser session: %s", text(res))
	} else if _, ok := m[mcpserver.NoteKey]; ok {
		t.Errorf("the note is repeated on the second call of the new session: %s", text(res))
	}
	runs := runsAfterClose(t, cs, srv, 2)
	spent := runWith(t, runs, "session time budget ("+budget.String()+") exhausted: the browser session ended")
	if spent == nil || spent["finished_at"] == nil || str(spent, "status") != "blocked" {
		t.Errorf("audit: no finished blocked run ended by the time budget: %v", runs)
	}
	for _, r := range runs {
		if r["finished_at"] == nil || r["kind"] != "mcp" {
			t.Errorf("audit: run not finished after the client left: %v", r)
		}
	}
}

// Over HTTP the same holds per Mcp-Session-Id: a's spent step budget ends a's browser session,
// and b's session (which spent nothing) goes on undisturbed; on a server with a short
// --session-time, c's spent time budget ends c's.
func TestHTTPBudgetsRenew(t *testing.T) {
	srv := httpServer(t, nil)
	a := httpClient(t, srv, "client-a", "")
	b := httpClient(t, srv, "client-b", "")
	searchOK(t, b)
	spendSteps(t, a)
	res, m := searchOK(t, a)
	checkNote(t, res, m, "step budget exhausted (max_steps 20)")
	if res, m := call(t, b, "list_links", `{}`); res.IsError || m[mcpserver.NoteKey] != nil {
		t.Errorf("session b after a's budget was spent:\n\tgot  %s\n\twant its page's links, no new session", text(res))
	}

	const budget = 6 * time.Second
	srv2 := httpServer(t, nil, "--session-time", budget.String())
	c := httpClient(t, srv2, "client-c", "")
	searchOK(t, c)
	spendTime(t, c, time.Now(), budget)
	res, m = searchOK(t, c)
	checkNote(t, res, m, "session time budget ("+budget.String()+") exhausted")

	a.Close()
	b.Close()
	c.Close()
	finished := func(db string, n int) []map[string]any {
		var runs []map[string]any
		if !testutil.Eventually(60*time.Second, func() bool {
			runs = auditRuns(t, db)
			if len(runs) != n {
				return false
			}
			for _, r := range runs {
				if r["finished_at"] == nil {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("audit: want %d finished runs: %v", n, runs)
		}
		return runs
	}
	runs := finished(srv.db, 3)
	count := map[string]int{}
	for _, r := range runs {
		count[str(r, "client")]++
	}
	if count["client-a 0.0.1-test"] != 2 || count["client-b 0.0.1-test"] != 1 {
		t.Errorf("audit runs per client: %v, want a 2, b 1", count)
	}
	if r := runWith(t, runs, "step budget exhausted (max_steps 20): the browser session ended"); r == nil || str(r, "client") != "client-a 0.0.1-test" || str(r, "status") != "blocked" {
		t.Errorf("audit: a's run ended by the step budget: %v", r)
	}
	runs = finished(srv2.db, 2)
	if r := runWith(t, runs, "session time budget ("+budget.String()+") exhausted: the browser session ended"); r == nil || str(r, "client") != "client-c 0.0.1-test" {
		t.Errorf("audit: c's run ended by the time budget: %v", runs)
	}
}

// new_session ends the browser session at the client's request: evidence extracted before it
// does not back an answer after it.
func TestNewSessionDropsEvidence(t *testing.T) {
	cs, srv := stdioClient(t, "go-sdk-test-client")
	origin := strings.SplitN(str(func() map[string]any { _, m := searchOK(t, cs); return m }(), "source"), "/search", 2)[0]
	rec := origin + "/records/SYN-0042"
	if res, _ := call(t, cs, "open_url", `{"url":"/records/SYN-0042"}`); res.IsError {
		t.Fatalf("open_url: %s", text(res))
	}
	res, m := call(t, cs, "extract_fields", `{}`)
	if res.IsError {
		t.Fatalf("extract_fields: %s", text(res))
	}
	status := ""
	fl, _ := untrusted(m)["fields"].([]any)
	for _, f := range fl {
		if fm, _ := f.(map[string]any); str(fm, "label") == "Status" {
			status = str(fm, "value")
		}
	}
	if status == "" {
		t.Fatalf("extract_fields: no Status: %v", m)
	}
	ans := `{"record_id":"SYN-0042","fields":{"Status":"` + status + `"},"sources":["` + rec + `"]}`
	if res, m := call(t, cs, "check_answer", ans); str(m, "status") != "answered" {
		t.Fatalf("check_answer before new_session:\n\tgot  %s\n\twant answered", text(res))
	}

	for _, args := range []string{`{"reset":true}`, `[1]`} {
		if res, m := call(t, cs, "new_session", args); !res.IsError || str(m, "rule") != coordinator.RuleArguments {
			t.Errorf("new_session %s:\n\tgot  %s\n\twant refused: it takes no arguments", args, text(res))
		}
	}
	res, m = call(t, cs, "new_session", `{}`)
	if res.IsError || str(m, "status") != "ok" || !strings.Contains(str(m, "reason"), "ended") {
		t.Fatalf("new_session:\n\tgot  %s\n\twant ok, the browser session ended", text(res))
	}
	// The same answer, the same sources: the evidence went with the old session.
	res, m = call(t, cs, "check_answer", ans)
	if str(m, "status") != "blocked" || !strings.Contains(str(m, "reason"), "no fields were extracted") {
		t.Errorf("check_answer after new_session with the old session's evidence:\n\tgot  %s\n\twant blocked: no fields extracted in this session", text(res))
	}
	checkNote(t, res, m, "the client asked for a new session")
	if res, m := call(t, cs, "read_page", `{}`); str(m, "reason") != coordinator.ReasonNoPage {
		t.Errorf("read_page after new_session:\n\tgot  %s\n\twant no page open", text(res))
	}
	// new_session twice: the second ends the (new) session too; nothing breaks.
	if res, _ := call(t, cs, "new_session", ``); res.IsError {
		t.Errorf("new_session without arguments: %s", text(res))
	}
	runs := runsAfterClose(t, cs, srv, 2)
	// Both runs were ended by new_session; the first says answered (its last check did).
	for _, r := range runs {
		if !strings.HasSuffix(str(r, "reason"), "the client asked for a new session (new_session)") {
			t.Errorf("audit: a run not ended by the client's new_session: %v", r)
		}
	}
	if first := runWith(t, runs, "every claimed value matches"); first == nil || str(first, "status") != "answered" {
		t.Errorf("audit: the first run ends answered (its last check): %v", runs)
	}
}
