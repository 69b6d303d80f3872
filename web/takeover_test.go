package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/browsertest"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// leaseBrowser is the HTTP fake browser with the takeover methods of the real one: it counts an
// Enter under the lease as a sign-in submission.
type leaseBrowser struct {
	*browsertest.HTTP
	mu      sync.Mutex
	held    bool
	writes  int64
	touched []string // what the page received, to check it went nowhere else
}

const fakeFrame = "\x89PNG-FAKE-TAKEOVER-FRAME"

func (b *leaseBrowser) SetSignInLease(h bool) { b.mu.Lock(); b.held = h; b.mu.Unlock() }
func (b *leaseBrowser) SignInWrites() int64   { b.mu.Lock(); defer b.mu.Unlock(); return b.writes }
func (b *leaseBrowser) TakeoverInput(ctx context.Context, in bridge.Input) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.held {
		return bridge.ErrNoLease
	}
	if in.Kind == "key" && in.Key == "Enter" {
		b.writes++
	}
	b.touched = append(b.touched, in.Text)
	return nil
}
func (b *leaseBrowser) TakeoverScreenshot(ctx context.Context) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.held {
		return nil, bridge.ErrNoLease
	}
	return []byte(fakeFrame), nil
}

func signInPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	// The demo's own policy names its sign-in route; the tests wait 30 s, not its 180.
	src := strings.Replace(string(demosite.PolicyYAML(site.URL)), "wait_seconds: 180}", "wait_seconds: 30}", 1)
	if !strings.Contains(src, "wait_seconds: 30}") {
		t.Fatal("the demo policy has no signin key with wait_seconds: 180")
	}
	pol, err := policy.Parse([]byte(src), "signin policy")
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(f string, a ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, f+"\n", a...)
	l.mu.Unlock()
}
func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestTakeover: a run at a sign-in page waits for its visitor; only that visitor can take the
// lease, see its frames and send input; the lease ends on release or expiry; the journal keeps
// counts only; what was typed and the holder's frames reach no event, replay, log or result.
func TestTakeover(t *testing.T) {
	const typed = "typed-pw-5521"
	owner, other := xff("10.0.0.1"), xff("10.0.0.2")
	setup := func(t *testing.T, opts ...Option) (*httptest.Server, *fakeClock, *leaseBrowser, *logBuf, string) {
		clock := &fakeClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		lb := &leaseBrowser{}
		logs := &logBuf{}
		launch := func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			lb.HTTP = browsertest.NewHTTP(pol)
			return lb, lb.HTTP, nil
		}
		s, err := New(signInPolicy(t), append([]Option{WithLauncher(launch), WithModel("offline", offlineModel), WithLedger(newLedger()),
			WithClock(clock.Now), WithTrustedProxies(loopback), WithLogf(logs.logf)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		t.Cleanup(func() { s.Close() })
		c := startRun(t, ts.URL, `{"preset":"sign-in"}`, owner)
		if !testutil.Eventually(30*time.Second, func() bool {
			var rj RunJSON
			do(t, "GET", ts.URL+"/api/runs/"+c.ID, "", nil).json(t, &rj)
			return rj.State == StateWaiting && rj.Takeover != nil && rj.Takeover.Banner == BannerAgent
		}) {
			t.Fatalf("the run never waited for a person")
		}
		return ts, clock, lb, logs, c.ID
	}

	t.Run("owner signs in, others cannot", func(t *testing.T) {
		ts, _, lb, logs, id := setup(t)
		base := ts.URL + "/api/runs/" + id
		// Nothing before a takeover, nothing for another visitor.
		if r := do(t, "POST", base+"/input", `{"kind":"text","text":"x"}`, owner); r.code != http.StatusConflict {
			t.Errorf("input before the takeover: %d %s, want 409", r.code, r.body)
		}
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/takeover", `{}`}, {"POST", "/input", `{"kind":"key","key":"Enter"}`}, {"POST", "/release", `{}`}, {"GET", "/takeover/frame", ""},
		} {
			if r := do(t, req.method, base+req.path, req.body, other); r.code != http.StatusForbidden {
				t.Errorf("another visitor %s %s: %d, want 403", req.method, req.path, r.code)
			}
		}
		if r := do(t, "POST", base+"/takeover", `{}`, owner); r.code != http.StatusOK {
			t.Fatalf("owner takeover: %d %s", r.code, r.body)
		}
		if r := do(t, "POST", base+"/takeover", `{}`, owner); r.code != http.StatusConflict {
			t.Errorf("second takeover: %d, want 409 (one holder)", r.code)
		}
		var rj RunJSON
		do(t, "GET", base, "", other).json(t, &rj)
		if rj.Takeover == nil || !rj.Takeover.Held || rj.Takeover.Banner != BannerPerson {
			t.Errorf("run during the lease: %+v, want the person banner", rj.Takeover)
		}
		if r := do(t, "GET", base+"/takeover/frame", "", other); r.code != http.StatusForbidden {
			t.Errorf("another visitor's frame during the lease: %d, want 403", r.code)
		}
		if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusOK || string(r.body) != fakeFrame {
			t.Errorf("holder's frame: %d %q", r.code, r.body)
		}
		for _, body := range []string{`{"kind":"click","x":0.4,"y":0.6}`, `{"kind":"text","text":"` + typed + `"}`, `{"kind":"key","key":"Enter"}`} {
			if r := do(t, "POST", base+"/input", body, owner); r.code != http.StatusNoContent {
				t.Errorf("input %s: %d %s", body, r.code, r.body)
			}
		}
		for _, body := range []string{`{"kind":"script","text":"location='/x'"}`, `{"kind":"key","key":"F5"}`, `{"kind":"click","x":5,"y":0}`, `{"kind":"navigate","url":"/"}`} {
			if r := do(t, "POST", base+"/input", body, owner); r.code != http.StatusBadRequest {
				t.Errorf("input %s: %d, want 400", body, r.code)
			}
		}
		if r := do(t, "POST", base+"/release", `{}`, owner); r.code != http.StatusOK {
			t.Fatalf("release: %d %s", r.code, r.body)
		}
		res := waitResult(t, ts.URL, id)
		found := false
		for _, s := range res.Steps {
			if strings.Contains(s.Reason, coordinator.ReasonPersonActed) {
				found = true
				if !strings.Contains(s.Reason, "1 clicks, 14 keys, 1 sign-in submissions") {
					t.Errorf("takeover step %q, want the counts", s.Reason)
				}
			}
		}
		if !found {
			t.Errorf("no takeover step in %+v", res.Steps)
		}
		evs, _ := readEvents(t, base+"/events", 0)
		var run RunJSON
		do(t, "GET", base, "", owner).json(t, &run)
		all := fmt.Sprintf("%+v %+v %+v %s", evs, run, res, logs.String())
		for _, secret := range []string{typed, "FAKE-TAKEOVER-FRAME", "0.4", "0.6"} {
			if strings.Contains(all, secret) {
				t.Errorf("%q reached the events, replay, run, result or log", secret)
			}
		}
		if len(lb.touched) != 3 || lb.touched[1] != typed {
			t.Errorf("the page received %q, want the three inputs", lb.touched)
		}
	})

	t.Run("nobody takes over", func(t *testing.T) {
		ts, clock, _, _, id := setup(t)
		clock.Add(31 * time.Second)
		res := waitResult(t, ts.URL, id)
		if res.Status != coordinator.StatusHuman {
			t.Errorf("status %s, want human_action_required", res.Status)
		}
		for _, s := range res.Steps {
			if strings.Contains(s.Reason, coordinator.ReasonPersonActed) {
				t.Errorf("a takeover step without a takeover: %+v", s)
			}
		}
	})

	t.Run("activity renews the lease up to its hard maximum", func(t *testing.T) {
		const idle, max = 20 * time.Second, 50 * time.Second
		ts, clock, lb, _, id := setup(t, WithLease(idle, max))
		base := ts.URL + "/api/runs/" + id
		r := do(t, "POST", base+"/takeover", `{}`, owner)
		var lease struct {
			IdleSeconds int `json:"idle_seconds"`
			MaxSeconds  int `json:"max_seconds"`
		}
		r.json(t, &lease)
		if r.code != http.StatusOK || lease.IdleSeconds != 20 || lease.MaxSeconds != 50 {
			t.Fatalf("takeover: %d %s, want 200 with the configured lease", r.code, r.body)
		}
		// Input every 15 s keeps the lease past its idle time (20 s)...
		for range 3 {
			clock.Add(15 * time.Second)
			if r := do(t, "POST", base+"/input", `{"kind":"key","key":"Tab"}`, owner); r.code != http.StatusNoContent {
				t.Fatalf("input at %v: %d %s, want 204 (renewed by activity)", clock.Now(), r.code, r.body)
			}
		}
		if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusOK {
			t.Fatalf("frame at 45 s: %d, want 200", r.code)
		}
		// ...but not past its maximum (50 s), however active the holder.
		clock.Add(6 * time.Second)
		if r := do(t, "POST", base+"/input", `{"kind":"key","key":"Tab"}`, owner); r.code != http.StatusConflict {
			t.Errorf("input past the maximum: %d, want 409", r.code)
		}
		if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusConflict {
			t.Errorf("frame past the maximum: %d, want 409", r.code)
		}
		res := waitResult(t, ts.URL, id)
		if res.Status != coordinator.StatusHuman {
			t.Errorf("status %s, want human_action_required (the lease ended without a sign-in)", res.Status)
		}
		lb.mu.Lock()
		held := lb.held
		lb.mu.Unlock()
		if held {
			t.Errorf("the browser's sign-in lease is still set after the lease ended")
		}
		if len(lb.touched) != 3 {
			t.Errorf("the page received %d inputs, want the 3 sent within the lease", len(lb.touched))
		}
	})

	t.Run("the lease expires", func(t *testing.T) {
		ts, clock, _, _, id := setup(t)
		base := ts.URL + "/api/runs/" + id
		if r := do(t, "POST", base+"/takeover", `{}`, owner); r.code != http.StatusOK {
			t.Fatalf("takeover: %d", r.code)
		}
		clock.Add(DefaultLeaseIdle + time.Second)
		if r := do(t, "POST", base+"/input", `{"kind":"key","key":"Tab"}`, owner); r.code != http.StatusConflict {
			t.Errorf("input after expiry: %d, want 409", r.code)
		}
		if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusConflict {
			t.Errorf("frame after expiry: %d, want 409", r.code)
		}
		res := waitResult(t, ts.URL, id)
		if res.Status != coordinator.StatusHuman {
			t.Errorf("status %s, want human_action_required (expired without signing in)", res.Status)
		}
	})
}

// TestTakeoverSignInRealBrowser: the sign-in preset on a real guarded Chromium against the demo
// site. The visitor takes over, types the demo credential through the input endpoint (keys and
// text, as the live view sends them), submits, releases; the agent continues in the same browser,
// signed in, and the run ends answered with the restricted record's fields. The password reaches
// no event, replay, run, result or log.
func TestTakeoverSignInRealBrowser(t *testing.T) {
	guardedLaunch := func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		g, err := guarded.LaunchOn(ctx, agentRT, pol, nil)
		if err != nil {
			return nil, nil, err
		}
		return g, g, nil
	}
	for _, tc := range []struct {
		name   string
		launch Launcher
	}{{"bridge", realLaunch}, {"bridge and egress proxy", guardedLaunch}} {
		t.Run(tc.name, func(t *testing.T) { takeoverSignIn(t, tc.launch) })
	}
}

func takeoverSignIn(t *testing.T, launch Launcher) {
	owner := xff("10.0.0.7")
	logs := &logBuf{}
	s, err := New(signInPolicy(t), WithLauncher(launch), WithModel("offline", offlineModel), WithLedger(newLedger()),
		WithTrustedProxies(loopback), WithLogf(logs.logf))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	c := startRun(t, ts.URL, `{"preset":"sign-in"}`, owner)
	base := ts.URL + "/api/runs/" + c.ID
	if !testutil.Eventually(90*time.Second, func() bool {
		var rj RunJSON
		do(t, "GET", base, "", nil).json(t, &rj)
		return rj.State == StateWaiting
	}) {
		t.Fatalf("the run never waited for a person")
	}
	if r := do(t, "POST", base+"/takeover", `{}`, owner); r.code != http.StatusOK {
		t.Fatalf("takeover: %d %s", r.code, r.body)
	}
	if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "\x89PNG") {
		t.Fatalf("holder's frame: %d", r.code)
	}
	// Tab past the four links of the site's navigation to the username field.
	inputs := []string{
		`{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`,
		`{"kind":"key","key":"Tab"}`, `{"kind":"text","text":"` + demosite.DemoUser + `"}`,
		`{"kind":"key","key":"Tab"}`, `{"kind":"text","text":"` + demosite.DemoPassword + `"}`, `{"kind":"key","key":"Enter"}`,
	}
	for _, in := range inputs {
		if r := do(t, "POST", base+"/input", in, owner); r.code != http.StatusNoContent {
			t.Fatalf("input %s: %d %s", in, r.code, r.body)
		}
	}
	// The submission is the page's own: wait until it went out under the lease.
	if !testutil.Eventually(20*time.Second, func() bool {
		b := s.runBrowser(c.ID)
		return b != nil && b.SignInWrites() > 0
	}) {
		t.Fatalf("the sign-in form was not submitted under the lease")
	}
	if r := do(t, "POST", base+"/release", `{}`, owner); r.code != http.StatusOK {
		t.Fatalf("release: %d %s", r.code, r.body)
	}
	res := waitResult(t, ts.URL, c.ID)
	if res.Status != coordinator.StatusAnswered {
		t.Fatalf("status %s (%s), want answered; steps %+v", res.Status, res.Reason, res.Steps)
	}
	evs, _ := readEvents(t, base+"/events", 0)
	var run RunJSON
	do(t, "GET", base, "", owner).json(t, &run)
	all := fmt.Sprintf("%+v %+v %+v %s", evs, run, res, logs.String())
	if strings.Contains(all, demosite.DemoPassword) {
		t.Errorf("the typed password reached the events, replay, run, result or log")
	}
}

// TestPageTakeover: a real browser drives the demo page as the visitor: start sign-in, take over,
// click into the live view, type the demo credential, submit, hand back → the run ends answered.
// A second visitor's page shows the banner but no take-over button and no frame.
func TestPageTakeover(t *testing.T) {
	s, err := New(signInPolicy(t), WithLauncher(realLaunch), WithModel("offline", offlineModel), WithLedger(newLedger()))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	page := newPage(t)
	_, err = page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "click sign-in", page.Locator(`button[data-preset="sign-in"]`).Click())
	must(t, "paused banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerAgent, playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(90_000)}))
	must(t, "take over", page.Locator("#takeover-start").Click())
	must(t, "person banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerPerson))
	must(t, "frame", expect.Locator(page.Locator("#takeover-frame")).ToBeVisible())
	frame := page.Locator("#takeover-frame")
	must(t, "click into the view", frame.Click(playwright.LocatorClickOptions{Position: &playwright.Position{X: 5, Y: 5}}))
	kb := page.Keyboard()
	for range 5 {
		must(t, "tab", kb.Press("Tab"))
	}
	must(t, "user", kb.Type(demosite.DemoUser))
	must(t, "tab", kb.Press("Tab"))
	must(t, "password", kb.Type(demosite.DemoPassword))
	must(t, "enter", kb.Press("Enter"))
	if !testutil.Eventually(30*time.Second, func() bool { b := s.runBrowser(page0ID(t, page)); return b != nil && b.SignInWrites() > 0 }) {
		shot(t, page, "page-takeover-not-signed-in")
		t.Fatalf("the visitor's sign-in did not go out")
	}
	shot(t, page, "page-takeover-signed-in")
	must(t, "hand back", page.Locator("#takeover-release").Click())
	must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(60_000)}))
}

// page0ID is the run the page follows (its #run= fragment).
func page0ID(t *testing.T, page playwright.Page) string {
	_, id, _ := strings.Cut(page.URL(), "#run=")
	return id
}
