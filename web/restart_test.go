package web

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/web/internal/demostate"
)

// TestRestartKeepsCounts: a visitor's live runs, the spend ledger and the queue are in the audit
// store: a new server on the same database counts them, and a run that was waiting in the queue
// when the last one stopped ends saying so. The page shows the count carried over.
func TestRestartKeepsCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	store, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := newGate()
	s1, err := New(testPol, withDemo(), WithLauncher(g.launch), WithModel("offline", offlineModel), WithLedger(store), WithVisitLog(store.SQL()),
		WithLimits(Limits{Queue: 1}))
	if err != nil {
		t.Fatal(err)
	}
	ts1 := httptest.NewServer(s1)
	defer ts1.Close()
	g.open()
	for range 2 {
		c := startRun(t, ts1.URL, `{"preset":"blocked-write"}`, nil)
		waitResult(t, ts1.URL, c.ID)
	}
	// A third live run held in its first Open, and a fourth waiting behind it when the process
	// "crashes" (the second server opens the database while the first still runs).
	g2 := newGate()
	s1.launch = g2.launch
	held := startRun(t, ts1.URL, `{"preset":"lookup"}`, nil)
	<-g2.started
	waiting := startRun(t, ts1.URL, `{"preset":"lookup"}`, nil)
	if waiting.State != StateQueued {
		t.Fatalf("fourth run: state %s, want queued", waiting.State)
	}

	_, ts2 := newServer(t, WithLedger(store), WithVisitLog(store.SQL()), WithPlayback(0, 0))
	var h HealthJSON
	do(t, "GET", ts2.URL+"/api/health", "", nil).json(t, &h)
	if h.RunsLeft != 1 {
		t.Errorf("after the restart: runs_left %d, want 1 (four live runs counted of five)", h.RunsLeft)
	}
	var run RunJSON
	do(t, "GET", ts2.URL+"/api/runs/"+waiting.ID, "", nil).json(t, &run)
	if run.State != StateDone || run.Result == nil || run.Result.Reason != WhyRestarted {
		t.Errorf("the run left in the queue: got state %s result %+v, want done: %q", run.State, run.Result, WhyRestarted)
	}
	page := newPage(t)
	_, err = page.Goto(ts2.URL)
	must(t, "goto", err)
	must(t, "one left", expect.Locator(page.Locator("#runs-left")).ToHaveText("1 live run left this hour."))
	must(t, "click", page.Locator(`button[data-preset="off-site"]`).Click())
	must(t, "live", expect.Locator(page.Locator(`.result-view[data-status="blocked"]`)).ToBeVisible())
	must(t, "none left", expect.Locator(page.Locator("#runs-left")).ToContainText("No live runs left this hour"))
	must(t, "click again", page.Locator(`button[data-preset="off-site"]`).Click())
	must(t, "recorded", expect.Locator(page.Locator("#recorded-banner")).ToContainText("visitor limit: 5 live runs per hour"))

	g2.open()
	waitResult(t, ts1.URL, held.ID)
	s1.Close()

	// No address is stored: every visitor in the log is a 32-hex hash, none the address.
	l, err := demostate.Open(t.Context(), store.SQL())
	if err != nil {
		t.Fatal(err)
	}
	vs, err := l.VisitsSince(t.Context(), time.Time{})
	if err != nil || len(vs) == 0 {
		t.Fatalf("visits: %v, %v", vs, err)
	}
	for _, v := range vs {
		if len(v.Visitor) != 32 || strings.Trim(v.Visitor, "0123456789abcdef") != "" || strings.Contains(v.Visitor, "127.0.0.1") {
			t.Errorf("visitor stored as %q, want a 32-hex hash", v.Visitor)
		}
	}
}
