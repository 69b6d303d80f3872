package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/runner"
)

// xff is the header set of a request forwarded for addr by a proxy.
func xff(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }

var loopback = netip.MustParsePrefix("127.0.0.1/32")

// burst posts body n times at once, each with hdr(i), and returns the answers.
func burst(t *testing.T, url, body string, n int, hdr func(i int) map[string]string) []resp {
	t.Helper()
	out := make([]resp, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = do(t, "POST", url+"/api/runs", body, hdr(i))
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// TestOneRunAtATime: while a live run is in progress, every other visitor gets a recorded run of
// their preset, labelled busy, with the live run to watch; of many requests at once on an idle
// server exactly one goes live.
func TestOneRunAtATime(t *testing.T) {
	g := newGate()
	_, ts := newServer(t, WithLauncher(g.launch), WithTrustedProxies(loopback), WithPlayback(0, 0))
	first := startRun(t, ts.URL, `{"preset":"lookup"}`, xff("203.0.113.1"))
	<-g.started // the run is in progress, held in its first Open

	// 50 concurrent requests from 50 visitors while it runs: every one plays a recording.
	rs := burst(t, ts.URL, `{"preset":"conflicting-sources"}`, 50, func(i int) map[string]string { return xff(fmt.Sprintf("198.51.100.%d", i+1)) })
	for i, r := range rs {
		var c CreatedJSON
		r.json(t, &c)
		if r.code != http.StatusAccepted || c.Recorded == nil || c.Recorded.Kind != KindBusy || c.Recorded.Watch != first.ID ||
			c.Recorded.Why != "busy: one live run at a time; 1 running, 0 waiting" || c.Recorded.Preset != "conflicting-sources" || c.RunsLeft != 5 {
			t.Errorf("request %d while busy: got %d %s\n\twant 202, recorded busy, watch %s, 5 live runs left", i, r.code, r.body, first.ID)
		}
	}
	// The run in progress can be watched by anyone: its stream and its state.
	var h HealthJSON
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if h.LiveRun != first.ID || h.Running != 1 {
		t.Errorf("health while busy: live_run %q running %d, want %s, 1", h.LiveRun, h.Running, first.ID)
	}
	g.open()
	if res := waitResult(t, ts.URL, first.ID); res.Status != coordinator.StatusAnswered {
		t.Fatalf("the running run: got %s (%s)", res.Status, res.Reason)
	}

	// A typed task is its visitor's words: while it runs, nobody else is offered to watch it.
	g = newGate()
	_, ts = newServer(t, WithLauncher(g.launch), WithTrustedProxies(loopback), WithPlayback(0, 0))
	typed := startRun(t, ts.URL, `{"task":"Look up SYN-0042 for my private project"}`, xff("203.0.113.1"))
	<-g.started
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, xff("203.0.113.2"))
	h = HealthJSON{}
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if c.Recorded == nil || c.Recorded.Kind != KindBusy || c.Recorded.Watch != "" || h.LiveRun != "" {
		t.Errorf("busy with a typed task: recorded %+v, live_run %q; want busy, nothing to watch", c.Recorded, h.LiveRun)
	}
	g.open()
	waitResult(t, ts.URL, typed.ID)

	// 50 concurrent requests at once on an idle server: exactly one runs live (held, so that no
	// request can come after it ends); the others play a recording labelled busy.
	g = newGate()
	_, ts = newServer(t, WithLauncher(g.launch), WithTrustedProxies(loopback), WithPlayback(0, 0))
	rs = burst(t, ts.URL, `{"preset":"lookup"}`, 50, func(i int) map[string]string { return xff(fmt.Sprintf("192.0.2.%d", i+1)) })
	live, busy := liveAndBusy(t, rs)
	if len(live) != 1 || busy != 49 {
		t.Fatalf("50 concurrent requests: %d live, %d recorded as busy; want 1 and 49", len(live), busy)
	}
	g.open()
	if res := waitResult(t, ts.URL, live[0].ID); res.Status != coordinator.StatusAnswered {
		t.Errorf("the live run: got %s", res.Status)
	}
}

// liveAndBusy splits the answers to a burst of lookup requests into the runs started live and the
// number played as the lookup's recording labelled busy; any other answer fails the test.
func liveAndBusy(t *testing.T, rs []resp) (live []CreatedJSON, busy int) {
	t.Helper()
	for i, r := range rs {
		var c CreatedJSON
		r.json(t, &c)
		switch {
		case r.code == http.StatusAccepted && c.Recorded == nil:
			live = append(live, c)
		case r.code == http.StatusAccepted && c.Recorded.Kind == KindBusy && c.Recorded.Preset == "lookup":
			busy++
		default:
			t.Errorf("request %d: got %d %s", i, r.code, r.body)
		}
	}
	return live, busy
}

func TestQueue(t *testing.T) {
	g := newGate()
	_, ts := newServer(t, WithLauncher(g.launch), WithLimits(Limits{Queue: 1}))
	first := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	<-g.started
	second := startRun(t, ts.URL, `{"preset":"conflicting-sources"}`, nil)
	if second.State != StateQueued || second.Place != 1 {
		t.Errorf("second run: got state %s place %d, want queued 1", second.State, second.Place)
	}
	third := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if third.Recorded == nil || third.Recorded.Kind != KindBusy || third.Recorded.Why != "busy: one live run at a time; 1 running, 1 waiting" || third.Recorded.Watch != first.ID {
		t.Errorf("third run with a full queue: got recorded %+v, want busy with 1 running, 1 waiting, watch %s", third.Recorded, first.ID)
	}
	g.open()
	if res := waitResult(t, ts.URL, first.ID); res.Status != coordinator.StatusAnswered {
		t.Errorf("first: %s", res.Status)
	}
	if res := waitResult(t, ts.URL, second.ID); res.Status != coordinator.StatusUncertain {
		t.Errorf("second: %s", res.Status)
	}
}

// TestVisitorLimit: five live runs per visitor per hour; the sixth plays a recording labelled with
// when the next live run comes; past the recorded runs' limit the answer is 429.
func TestVisitorLimit(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	_, ts := newServer(t, WithClock(clock.Now), WithTrustedProxies(loopback), WithPlayback(0, 0), WithLimits(Limits{Recorded: 3}))
	alice := xff("203.0.113.7")
	latest := ""
	for i := range 5 {
		c := startRun(t, ts.URL, `{"preset":"blocked-write"}`, alice)
		if c.Recorded != nil || c.RunsLeft != 4-i {
			t.Errorf("run %d: recorded %+v, %d left; want live, %d left", i+1, c.Recorded, c.RunsLeft, 4-i)
		}
		waitResult(t, ts.URL, c.ID)
		latest = c.ID
		clock.Add(5 * time.Minute)
	}
	var h HealthJSON
	do(t, "GET", ts.URL+"/api/health", "", alice).json(t, &h)
	if h.RunsLeft != 0 || h.RunsBackSeconds != 2100 {
		t.Errorf("health after five: runs_left %d back %d s, want 0, 2100", h.RunsLeft, h.RunsBackSeconds)
	}
	// 25 minutes after the first run: the sixth plays a recording; the next live run is in 35 min.
	sixth := startRun(t, ts.URL, `{"preset":"blocked-write"}`, alice)
	if sixth.Recorded == nil || sixth.Recorded.Kind != KindVisitor || sixth.Recorded.Why != "visitor limit: 5 live runs per hour; next live run in 35 min" || sixth.RunsLeft != 0 {
		t.Fatalf("sixth run in an hour: got recorded %+v, %d left", sixth.Recorded, sixth.RunsLeft)
	}
	checkRecorded(t, ts.URL, sixth, sixth.Recorded.Why, "blocked-write", latest)
	// Rejected tasks do not count; another visitor is not limited.
	bob := startRun(t, ts.URL, `{"preset":"blocked-write"}`, xff("203.0.113.8"))
	if bob.Recorded != nil {
		t.Errorf("another visitor: recorded %+v", bob.Recorded)
	}
	waitResult(t, ts.URL, bob.ID)
	// A forwarded-for header the client adds itself is not believed: through the proxy, the
	// right-most untrusted address is the visitor.
	if c := startRun(t, ts.URL, `{"preset":"blocked-write"}`, xff("198.51.100.99, 203.0.113.7")); c.Recorded == nil || c.Recorded.Kind != KindVisitor {
		t.Errorf("spoofed X-Forwarded-For: got recorded %+v, want the visitor limit", c.Recorded)
	}
	clock.Add(35 * time.Minute) // the first run is an hour old, the other four are not
	c := startRun(t, ts.URL, `{"preset":"blocked-write"}`, alice)
	if c.Recorded != nil {
		t.Errorf("an hour after the first: recorded %+v, want live", c.Recorded)
	}
	waitResult(t, ts.URL, c.ID)
	if c := startRun(t, ts.URL, `{"preset":"off-site"}`, xff("203.0.113.7")); c.Recorded == nil || c.Recorded.Kind != KindVisitor {
		t.Errorf("again at five in the hour: got recorded %+v, want the visitor limit", c.Recorded)
	}
	// That was the third recorded run in the hour: past the limit (3 here) the answer is 429.
	r := do(t, "POST", ts.URL+"/api/runs", `{"preset":"lookup"}`, alice)
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1500" || r.errText(t) != "visitor limit: 3 recorded runs per hour; try again in 25 min" {
		t.Errorf("fourth recorded run: got %d Retry-After %q %s, want 429, 1500", r.code, r.header.Get("Retry-After"), r.body)
	}
}

func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	// Without a trusted proxy every request is the loopback visitor, whatever it claims.
	_, ts := newServer(t)
	for i := range 5 {
		c := startRun(t, ts.URL, `{"preset":"off-site"}`, xff(fmt.Sprintf("203.0.113.%d", i+1)))
		waitResult(t, ts.URL, c.ID)
	}
	if c := startRun(t, ts.URL, `{"preset":"off-site"}`, xff("203.0.113.200")); c.Recorded == nil || c.Recorded.Kind != KindVisitor {
		t.Errorf("sixth run with a made-up X-Forwarded-For from an untrusted peer: got recorded %+v, want the visitor limit", c.Recorded)
	}
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		name, remote, xff, want string
	}{
		{"no proxy", "203.0.113.5:4000", "", "203.0.113.5"},
		{"untrusted peer ignores header", "203.0.113.5:4000", "1.2.3.4", "203.0.113.5"},
		{"trusted proxy", "10.1.2.3:4000", "198.51.100.7", "198.51.100.7"},
		{"chain of trusted proxies", "127.0.0.1:4000", "198.51.100.7, 10.9.9.9", "198.51.100.7"},
		{"client-supplied prefix is not believed", "10.1.2.3:4000", "6.6.6.6, 198.51.100.7", "198.51.100.7"},
		{"malformed entry stops the walk", "10.1.2.3:4000", "198.51.100.7, bogus", "10.1.2.3"},
		{"only proxies", "10.1.2.3:4000", "10.4.4.4", "10.4.4.4"},
		{"ipv6 client", "[::1]:4000", "", "::1"},
		{"mapped ipv4", "[::ffff:10.1.2.3]:4000", "198.51.100.9", "198.51.100.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if got := clientAddr(r, trusted).String(); got != tt.want {
				t.Errorf("clientAddr(%s, XFF %q):\n\tgot  %s\n\twant %s", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
	if got := visitorKey(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")); got != "2001:db8:1:2::/64" {
		t.Errorf("visitorKey(ipv6): got %s, want the /64", got)
	}
	for _, bad := range []string{"", "10.0.0.0/33", "example.com", "10.0.0.1/8/1"} {
		if _, err := ParseTrustedProxy(bad); err == nil {
			t.Errorf("ParseTrustedProxy(%q): no error", bad)
		}
	}
}

// costModel is the offline planner charging usd per turn.
func costModel(usd float64) runner.ModelFunc {
	return func() (coordinator.Model, error) {
		off := offline.New()
		return coordinator.ModelFunc{ModelName: "priced", F: func(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
			turn, err := off.Next(ctx, msgs, tools)
			turn.Usage.CostUSD = usd
			return turn, err
		}}, nil
	}
}

func TestSpendCap(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)}
	day := "2026-03-01"
	ledger := newLedger()
	_, ts := newServer(t, WithLedger(ledger), WithClock(clock.Now), WithModel("priced", costModel(0.05)),
		WithPlayback(0, 0), WithLimits(Limits{PerVisitor: 100}))

	// Under the cap: a live run, charged after it ends.
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	res := waitResult(t, ts.URL, c.ID)
	if c.Recorded != nil || res.Status != coordinator.StatusAnswered {
		t.Fatalf("under the cap: got recorded %v, %s", c.Recorded, res.Status)
	}
	if got, want := ledger.on(day), res.Usage.CostUSD; got != want || want <= 0 {
		t.Errorf("ledger after one run: got $%v, want $%v", got, want)
	}

	// Over the cap: the recorded run of the same preset plays, labelled.
	ledger.set(func(l *memLedger) { l.spend[day] = 3.0 })
	c = startRun(t, ts.URL, `{"preset":"conflicting-sources"}`, nil)
	checkRecorded(t, ts.URL, c, WhySpendCap, "conflicting-sources", "")
	if got := ledger.on(day); got != 3.0 {
		t.Errorf("a recorded run was charged: ledger $%v", got)
	}

	// A new day has a new budget.
	clock.Add(2 * time.Hour)
	c = startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Recorded != nil {
		t.Errorf("next day: recorded %+v, want live", c.Recorded)
	}
	waitResult(t, ts.URL, c.ID)
	latestLookup := c.ID // from now on, the lookup's recording is this run

	// An unreadable ledger: fail closed.
	ledger.set(func(l *memLedger) { l.readErr = errors.New("database is locked") })
	c = startRun(t, ts.URL, `{"preset":"sign-in"}`, nil)
	checkRecorded(t, ts.URL, c, WhyLedger, "sign-in", "")

	// A typed task plays the recording of its record when there is one, else the lookup's, and
	// says it is not the task asked.
	c = startRun(t, ts.URL, `{"task":"Look up SYN-0077 for me"}`, nil)
	checkRecorded(t, ts.URL, c, WhyLedger, "conflicting-sources", "")
	if !c.Recorded.OtherTask {
		t.Errorf("typed task: the recording is of another task, want other_task")
	}
	c = startRun(t, ts.URL, `{"task":"Look up SYN-0100"}`, nil)
	checkRecorded(t, ts.URL, c, WhyLedger, "lookup", latestLookup)

	// A charge the ledger cannot take stops live runs until it can.
	ledger.set(func(l *memLedger) { l.readErr = nil; l.writeErr = errors.New("disk full") })
	c = startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Recorded != nil {
		t.Fatalf("readable ledger: got recorded")
	}
	waitResult(t, ts.URL, c.ID)
	latestLookup = c.ID
	c = startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	checkRecorded(t, ts.URL, c, WhyLedger, "lookup", latestLookup)
	ledger.set(func(l *memLedger) { l.writeErr = nil })
	before := ledger.on(dayKey(clock.Now()))
	c = startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Recorded != nil {
		t.Errorf("ledger back: got recorded %+v", c.Recorded)
	}
	waitResult(t, ts.URL, c.ID)
	if got := ledger.on(dayKey(clock.Now())); got <= before {
		t.Errorf("the unpaid charge and the new one were not written: $%v then $%v", before, got)
	}
}

func dayKey(t time.Time) string { return t.UTC().Format("2006-01-02") }

// checkRecorded follows a run that must be a recorded one of preset, played because of why.
// latest is the run ID of the latest live run of preset on this server, "" when none: it is
// played instead of the embedded recording.
func checkRecorded(t *testing.T, base string, c CreatedJSON, why, preset, latest string) {
	t.Helper()
	if c.Recorded == nil || c.Recorded.Why != why || c.Recorded.Preset != preset || c.Recorded.RecordedAt.IsZero() || c.Recorded.Browser == "" {
		t.Fatalf("POST: got recorded %+v, want a recording of %s because %q", c.Recorded, preset, why)
	}
	evs, _ := readEvents(t, base+c.Events, 0)
	rec, _ := runner.LoadRecordings(presets.Recorded())
	var want runner.Recording
	for _, r := range rec {
		if r.Preset == preset {
			want = r
		}
	}
	if latest != "" {
		want.Result.RunID = latest
	}
	steps := 0
	var res runner.ResultJSON
	for _, ev := range evs {
		switch ev.name {
		case EventStep:
			steps++
		case EventResult:
			json.Unmarshal([]byte(ev.data), &res)
		}
	}
	if res.Status != want.Result.Status || res.RunID != want.Result.RunID || steps != len(want.Result.Steps) {
		t.Errorf("recorded %s: got %s run %s with %d steps, want %s run %s with %d", preset, res.Status, res.RunID, steps, want.Result.Status, want.Result.RunID, len(want.Result.Steps))
	}
	var run RunJSON
	do(t, "GET", base+c.URL, "", nil).json(t, &run)
	if run.Recorded == nil || run.Recorded.Why != why {
		t.Errorf("GET run: recorded label %+v", run.Recorded)
	}
}

func TestUnpaidSpendKeepsItsDay(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)}
	ledger := newLedger()
	ledger.set(func(l *memLedger) { l.writeErr = errors.New("disk full") })
	s, ts := newServer(t, WithLedger(ledger), WithClock(clock.Now), WithModel("priced", costModel(0.05)))
	waitResult(t, ts.URL, startRun(t, ts.URL, `{"preset":"lookup"}`, nil).ID)
	if s.unpaidCount() != 1 {
		t.Fatalf("unpaid days: got %d, want 1", s.unpaidCount())
	}
	var h HealthJSON
	do(t, "GET", ts.URL+"/api/health", "", nil).json(t, &h)
	if h.Live || h.Why != WhyLedger {
		t.Errorf("health with an unpaid charge: live=%v why=%q", h.Live, h.Why)
	}
	clock.Add(2 * time.Minute) // the next day
	ledger.set(func(l *memLedger) { l.writeErr = nil })
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Recorded != nil {
		t.Fatalf("ledger back: got recorded %+v", c.Recorded)
	}
	res := waitResult(t, ts.URL, c.ID)
	if got := ledger.on("2026-03-01"); got != res.Usage.CostUSD {
		t.Errorf("the unpaid charge on its day: got $%v, want $%v", got, res.Usage.CostUSD)
	}
	if got := ledger.on("2026-03-02"); got != res.Usage.CostUSD {
		t.Errorf("the next day's ledger: got $%v, want $%v", got, res.Usage.CostUSD)
	}
}

// TestNoRecordingsGiven: the recorded runs are the ones given (WithRecordings), none without: a
// paused run then ends saying that no recorded run is available.
func TestNoRecordingsGiven(t *testing.T) {
	_, ts := newServer(t, WithRecordings(nil), WithRecordedOnly(true), WithPlayback(0, 0))
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	if c.Recorded == nil || c.Recorded.Preset != "" {
		t.Errorf("POST: recorded label %+v, want one with no recording", c.Recorded)
	}
	if res := waitResult(t, ts.URL, c.ID); !strings.Contains(res.Reason, "no recorded run is available") {
		t.Errorf("result: %s %q, want the reason that no recorded run is available", res.Status, res.Reason)
	}
}
