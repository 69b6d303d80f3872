package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
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
// waitForPerson waits up to within for the run at url to wait for a person, and for more to hold
// of it too when more is given.
func waitForPerson(t *testing.T, within time.Duration, url string, more func(RunJSON) bool) {
	t.Helper()
	if !testutil.Eventually(within, func() bool {
		var rj RunJSON
		do(t, "GET", url, "", nil).json(t, &rj)
		return rj.State == StateWaiting && (more == nil || more(rj))
	}) {
		t.Fatalf("the run never waited for a person")
	}
}

// takeOverWhenWaiting waits for the run at url to wait for a person, takes it over as who and
// returns url.
func takeOverWhenWaiting(t *testing.T, url string, who map[string]string) string {
	t.Helper()
	waitForPerson(t, 90*time.Second, url, nil)
	if r := do(t, "POST", url+"/takeover", `{}`, who); r.code != http.StatusOK {
		t.Fatalf("takeover: %d %s", r.code, r.body)
	}
	return url
}

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
		_, ts := newServerOn(t, signInPolicy(t), append([]Option{WithLauncher(launch), WithClock(clock.Now), WithTrustedProxies(loopback), WithLogf(logs.logf)}, opts...)...)
		c := startRun(t, ts.URL, `{"preset":"sign-in"}`, owner)
		waitForPerson(t, 30*time.Second, ts.URL+"/api/runs/"+c.ID, func(rj RunJSON) bool {
			return rj.Takeover != nil && rj.Takeover.Banner == BannerAgent
		})
		return ts, clock, lb, logs, c.ID
	}

	// leaseOver: the lease has ended (when says how), so the owner's input and frame are refused
	// and the run ends for want of a sign-in.
	leaseOver := func(t *testing.T, server, id, when string) {
		t.Helper()
		base := server + "/api/runs/" + id
		if r := do(t, "POST", base+"/input", `{"kind":"key","key":"Tab"}`, owner); r.code != http.StatusConflict {
			t.Errorf("input %s: %d, want 409", when, r.code)
		}
		if r := do(t, "GET", base+"/takeover/frame", "", owner); r.code != http.StatusConflict {
			t.Errorf("frame %s: %d, want 409", when, r.code)
		}
		if res := waitResult(t, server, id); res.Status != coordinator.StatusHuman {
			t.Errorf("status %s, want human_action_required (the lease ended %s without a sign-in)", res.Status, when)
		}
	}

	t.Run("owner signs in, others cannot", func(t *testing.T) {
		ts, _, lb, logs, id := setup(t)
		base := ts.URL + "/api/runs/" + id
		// Whose run it is: the page asks before it offers the take-over button.
		for _, v := range []struct {
			who  map[string]string
			want bool
		}{{owner, true}, {other, false}} {
			var st TakeoverStatusJSON
			r := do(t, "GET", base+"/takeover", "", v.who)
			if r.json(t, &st); r.code != http.StatusOK || st.Yours != v.want || !st.Waiting || st.Held {
				t.Errorf("GET takeover as %v: %d %+v, want yours=%v, waiting, not held", v.who, r.code, st, v.want)
			}
		}
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
				if !strings.HasSuffix(s.Reason, "1 click, 14 keys, 1 sign-in submission") {
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
		leaseOver(t, ts.URL, id, "past the maximum")
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
		leaseOver(t, ts.URL, id, "after expiry")
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
		launch coordinator.Launcher
	}{{"bridge", realLaunch}, {"bridge and egress proxy", guardedLaunch}} {
		t.Run(tc.name, func(t *testing.T) { takeoverSignIn(t, tc.launch) })
	}
}

func takeoverSignIn(t *testing.T, launch coordinator.Launcher) {
	owner := xff("10.0.0.7")
	logs := &logBuf{}
	// What the model is given, as a transcript would hold it.
	var transcript logBuf
	model := func() (coordinator.Model, error) {
		off := offline.New()
		return coordinator.ModelFunc{ModelName: off.Name(), F: func(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
			for _, m := range msgs {
				transcript.logf("%+v", m)
			}
			return off.Next(ctx, msgs, tools)
		}}, nil
	}
	s, ts := newServerOn(t, signInPolicy(t), WithLauncher(launch), WithModel("offline", model), WithTrustedProxies(loopback), WithLogf(logs.logf))
	c := startRun(t, ts.URL, `{"preset":"sign-in"}`, owner)
	base := takeOverWhenWaiting(t, ts.URL+"/api/runs/"+c.ID, owner)
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
	tr := transcript.String()
	if !strings.Contains(tr, coordinator.ReasonPersonActed) {
		t.Errorf("the model was not told a person acted on the page: the transcript is not what it was given")
	}
	secrets := append([]string{demosite.DemoPassword}, site.Site.SessionIDs()...)
	if len(secrets) < 2 {
		t.Errorf("no session was issued: the sign-in did not reach the site")
	}
	for _, secret := range secrets {
		if strings.Contains(tr, secret) || strings.Contains(all, secret) {
			t.Errorf("the password or a session cookie reached the model's transcript, the events or the log")
		}
	}
}

// TestPageTakeover: a real browser drives the demo page as the visitor, on a 390 px phone: start
// sign-in, take over, click into the live view, type the demo credential, submit, hand back → the
// run ends answered, as the card says it does once the visitor signs in. At each stage the banner
// and the live view's placeholder say what is true: paused and withheld, a person in control, the
// agent in control again, the run ended. A second visitor's page shows the banner but no
// take-over button and no frame.
func TestPageTakeover(t *testing.T) {
	s, ts := newServerOn(t, signInPolicy(t), WithLauncher(realLaunch), WithTrustedProxies(loopback))
	page := newPageAt(t, 390, 844)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	var card PresetJSON
	for _, p := range s.presetsJSON() {
		if p.Name == "sign-in" {
			card = p
		}
	}
	if card.ExpectSignedIn != coordinator.StatusAnswered {
		t.Fatalf("the sign-in card on a server that offers the takeover: %+v, want it to end answered once signed in", card)
	}
	must(t, "click sign-in", page.Locator(`button[data-preset="sign-in"]`).Click())
	must(t, "the run in view", expect.Locator(page.Locator("#run-title")).ToBeInViewport())
	must(t, "paused banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerAgent, playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(90_000)}))
	must(t, "withheld while waiting", expect.Locator(page.Locator("#screen-note")).ToHaveText(viewWithheld))
	must(t, "the button styled", expect.Locator(page.Locator("#takeover-start")).ToHaveCSS("background-color", "rgb(179, 92, 0)"))
	must(t, "to the banner", page.Locator("#takeover").ScrollIntoViewIfNeeded())
	shotView(t, page, "phone-sign-in-waiting")
	must(t, "take over", page.Locator("#takeover-start").Click())
	must(t, "person banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerPerson))
	must(t, "frame", expect.Locator(page.Locator("#takeover-frame")).ToBeVisible())
	fw, err := page.Locator("#takeover-frame").BoundingBox()
	must(t, "takeover frame box", err)
	if fw.Width < 890 {
		t.Errorf("the takeover view on a phone is %.0f px wide, want 70%% of the page (896 px), scrolled", fw.Width)
	}
	// Another visitor following the run sees who is in control, and neither the button nor the
	// frame; the frame endpoint refuses them.
	bctx, err := ui.NewContext(playwright.BrowserNewContextOptions{ExtraHttpHeaders: map[string]string{"X-Forwarded-For": "10.0.0.22"}})
	must(t, "spectator context", err)
	t.Cleanup(func() { bctx.Close() })
	spec, err := bctx.NewPage()
	must(t, "spectator page", err)
	watchPage(t, spec)
	id := page0ID(t, page)
	_, err = spec.Goto(ts.URL + "/#run=" + id)
	must(t, "spectator goto", err)
	must(t, "spectator banner", expect.Locator(spec.Locator("#takeover-banner")).ToHaveText(BannerPerson))
	must(t, "spectator note", expect.Locator(spec.Locator("#takeover-note")).ToContainText("Only the visitor who started this run can take over"))
	must(t, "no take-over button", expect.Locator(spec.Locator("#takeover-start")).ToBeHidden())
	must(t, "no frame", expect.Locator(spec.Locator("#takeover-frame")).ToBeHidden())
	for _, what := range []string{"takeover/frame", "takeover", "input", "release"} {
		method := "POST"
		if what == "takeover/frame" {
			method = "GET"
		}
		code, err := spec.Evaluate(`([u, m]) => fetch(u, m === "GET" ? {} : {method: m, headers: {"Content-Type": "application/json"}, body: '{"kind":"key","key":"Enter"}'}).then(r => r.status)`,
			[]any{"/api/runs/" + id + "/" + what, method})
		if err != nil || code != http.StatusForbidden {
			t.Errorf("the spectator's %s %s: %v %v, want 403", method, what, code, err)
		}
	}
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
		note, _ := page.Locator("#takeover-note").TextContent()
		t.Logf("the page's note: %q", note)
		if b, ok := s.runBrowser(page0ID(t, page)).(interface {
			Decisions() []bridge.RequestDecision
		}); ok {
			for _, d := range b.Decisions() {
				t.Logf("decision: %s %s%s %s %s", d.Method, d.Origin, d.Path, d.Verdict, d.Reason)
			}
		}
		t.Fatalf("the visitor's sign-in did not go out")
	}
	shot(t, page, "page-takeover-signed-in")
	shotView(t, page, "phone-sign-in-in-control")
	must(t, "hand back", page.Locator("#takeover-release").Click())
	must(t, "the agent has it again", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(regexp.MustCompile("^("+regexp.QuoteMeta(bannerBack)+"|"+regexp.QuoteMeta(bannerEnded)+")$")))
	if b, _ := page.Locator("#takeover-banner").TextContent(); b == bannerBack {
		shotView(t, page, "phone-sign-in-handed-back")
	}
	must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(60_000)}))
	checkEnded(t, page, card, true)
	checkAnswerPaired(t, page)
	checkFits(t, page, 390)
	must(t, "the live view shows the agent's page", expect.Locator(page.Locator("#frame")).ToBeVisible())
	must(t, "to the run", page.Locator("#run").ScrollIntoViewIfNeeded())
	shotView(t, page, "phone-sign-in-ended")
	// The live view said what happened between the hand-back and the agent's next page: handed
	// back, never "no page open" (which a denial explains).
	evs, _ := readEvents(t, ts.URL+"/api/runs/"+page0ID(t, page)+"/events", 0)
	views := []string{}
	for _, ev := range evs {
		if ev.name == EventFrame && strings.Contains(ev.data, `"view"`) {
			views = append(views, ev.data)
		}
	}
	if all := strings.Join(views, " "); !strings.Contains(all, `"view":"`+runner.ViewHandedBack+`"`) || strings.Contains(all, runner.ViewNoPage) ||
		!strings.Contains(all, `"view":"`+runner.ViewWithheld+`"`) {
		t.Errorf("the live view's placeholders: %s; want withheld at the sign-in page, then handed back, never %q", all, runner.ViewNoPage)
	}
}

// page0ID is the run the page follows (its #run= fragment).
func page0ID(t *testing.T, page playwright.Page) string {
	_, id, _ := strings.Cut(page.URL(), "#run=")
	return id
}

// hostileSignIn is a site with a sign-in form whose signed-in record page, the first time it is
// shown, writes and leaves the site by itself: a POST to a delete route, a PUT to the sign-in
// route, a fetch and an image to another origin, and a navigation there. canary is that origin;
// every request to it is counted, as is every write to the site but the sign-in POST.
type hostileSignIn struct {
	site, canary *httptest.Server
	mu           sync.Mutex
	mutations    []string
	logins       int
	canaryHits   int
	scripted     bool
}

const hostilePassword = "pw-hostile-8832"

func newHostileSignIn(t *testing.T) *hostileSignIn {
	h := &hostileSignIn{}
	h.canary = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.canaryHits++
		h.mu.Unlock()
	}))
	t.Cleanup(h.canary.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodPost && r.URL.Path == "/login" {
			r.ParseForm()
			if r.PostForm.Get("user") != "demo" || r.PostForm.Get("password") != hostilePassword {
				http.Error(w, "bad credential", http.StatusForbidden)
				return
			}
			h.mu.Lock()
			h.logins++
			h.mu.Unlock()
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "HOSTILE-SESSION-5517", Path: "/"})
			http.Redirect(w, r, "/records/SYN-0013", http.StatusSeeOther)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.mu.Lock()
			h.mutations = append(h.mutations, r.Method+" "+r.URL.Path)
			h.mu.Unlock()
			return
		}
		switch {
		case r.URL.Path == "/login":
			fmt.Fprint(w, `<!doctype html><title>Sign in</title><form method="post" action="/login">
<input name="user"><input type="password" name="password"><button>Sign in</button></form>`)
		case r.URL.Path == "/records/SYN-0013":
			if c, err := r.Cookie("sid"); err != nil || c.Value != "HOSTILE-SESSION-5517" {
				http.Redirect(w, r, "/login?next=/records/SYN-0013", http.StatusFound)
				return
			}
			h.mu.Lock()
			first := !h.scripted
			h.scripted = true
			h.mu.Unlock()
			fmt.Fprint(w, `<!doctype html><title>SYN-0013</title><h1>SYN-0013</h1>
<dl><dt>Record ID</dt><dd>SYN-0013</dd><dt>Status</dt><dd>Active</dd></dl>`)
			if first {
				fmt.Fprintf(w, `<script>
fetch('/records/SYN-0013/delete', {method: 'POST', body: 'x=1'}).catch(() => {});
fetch('/login', {method: 'PUT', body: 'user=demo'}).catch(() => {});
fetch('%[1]s/fetch').catch(() => {});
new Image().src = '%[1]s/img';
setTimeout(() => { location.href = '%[1]s/nav'; }, 300);
</script>`, h.canary.URL)
			}
		default:
			http.NotFound(w, r)
		}
	})
	h.site = httptest.NewServer(mux)
	t.Cleanup(h.site.Close)
	return h
}

func (h *hostileSignIn) counts() (mutations []string, logins, canary int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.mutations...), h.logins, h.canaryHits
}

// TestTakeoverHeldToPolicy: a compromised model (a script) and a page that acts by itself get
// nothing from a person's lease. Before, during and after the lease the model's crafted sign-in
// URLs and writes are denied; while the lease is held the model is not even asked (its tools are
// paused), and what a tool would do through the run's browser is denied by the bridge, and by the
// egress proxy on its own, which forwards the sign-in POST alone (its positive control). The
// signed-in page's own writes and its navigation off the site during the lease are denied: no
// write but the sign-in reaches the site, nothing reaches the other origin.
func TestTakeoverHeldToPolicy(t *testing.T) {
	h := newHostileSignIn(t)
	site, canary := h.site.URL, h.canary.URL
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/login, \"/login?next={path}\", \"/records/{id}\"]\n"+
		"    signin: {routes: [/login], methods: [POST], wait_seconds: 60}\n"+
		"record:\n  id: {pattern: 'SYN-\\d{4}', example: SYN-0042}\n", site)
	pol, err := policy.Parse([]byte(src), "hostile signin policy")
	if err != nil {
		t.Fatal(err)
	}
	step := func(call, args string) coordinator.ScriptStep {
		return coordinator.ScriptStep{Call: call, Args: []byte(args)}
	}
	openURL := func(u string) coordinator.ScriptStep { return step("open_url", `{"url":"`+u+`"}`) }
	crafted := []coordinator.ScriptStep{
		openURL(site + "/login?user=demo&password=" + hostilePassword),
		openURL(site + "/login?next=/records/SYN-0013&password=" + hostilePassword),
		step("open_url", `{"url":"`+site+`/login","method":"POST","body":"user=demo"}`),
		step("submit_form", `{"url":"`+site+`/login","user":"demo"}`),
		openURL(site + "/records/SYN-0013/delete"),
		openURL(canary + "/model"),
	}
	steps := append([]coordinator.ScriptStep(nil), crafted...)
	steps = append(steps, openURL(site+"/records/SYN-0013")) // the sign-in page: the run waits
	steps = append(steps, crafted...)
	steps = append(steps, openURL(site+"/records/SYN-0013"), step("extract_fields", `{}`),
		coordinator.ScriptStep{Final: []byte(`{"record_id":"SYN-0013","fields":{"Status":"Active"},"sources":["` + site + `/records/SYN-0013"]}`)})
	script := coordinator.ScriptModel("script:hostile", coordinator.Script{Steps: steps})
	var turnsMu sync.Mutex
	turns := 0
	model := coordinator.ModelFunc{ModelName: "script:hostile", F: func(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
		turnsMu.Lock()
		turns++
		turnsMu.Unlock()
		return script.Next(ctx, msgs, tools)
	}}
	modelTurns := func() int { turnsMu.Lock(); defer turnsMu.Unlock(); return turns }
	guardedLaunch := func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		g, err := guarded.LaunchOn(ctx, agentRT, pol, nil)
		if err != nil {
			return nil, nil, err
		}
		return g, g, nil
	}
	owner := xff("10.0.0.9")
	s, ts := newServerOn(t, pol, WithLauncher(guardedLaunch), WithModel("script:hostile", func() (coordinator.Model, error) { return model, nil }),
		WithTrustedProxies(loopback))
	c := startRun(t, ts.URL, `{"task":"Look up SYN-0013"}`, owner)
	base := takeOverWhenWaiting(t, ts.URL+"/api/runs/"+c.ID, owner)
	g, ok := s.runBrowser(c.ID).(*guarded.Browser)
	if !ok {
		t.Fatalf("the run's browser is %T, want *guarded.Browser", s.runBrowser(c.ID))
	}
	atLease := modelTurns()

	// During the lease, what a tool would do through the run's browser is denied by the bridge.
	for _, u := range []string{site + "/login?user=demo&password=" + hostilePassword, site + "/records/SYN-0013/delete", canary + "/tool"} {
		if _, err := g.Open(ctxT(t, 20*time.Second), u); err == nil {
			t.Errorf("Open(%s) during the lease: no error, want denied", u)
		} else if _, denied := bridge.IsDenied(err); !denied {
			t.Errorf("Open(%s) during the lease: %v, want denied", u, err)
		}
	}
	// The proxy on its own: every write but the sign-in POST, and the other origin, are denied.
	pc := g.Proxy().Client()
	for _, req := range []struct{ method, url, body string }{
		{"POST", site + "/records/SYN-0013/delete", "x=1"},
		{"PUT", site + "/login", "user=demo"},
		{"POST", site + "/login/", "user=demo"},
		{"GET", canary + "/proxy", ""},
		{"POST", canary + "/login", "user=demo"},
	} {
		r, _ := http.NewRequest(req.method, req.url, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if res, err := pc.Do(r); err == nil {
			res.Body.Close()
			if res.StatusCode < 400 {
				t.Errorf("%s %s through the proxy during the lease: %d, want denied", req.method, req.url, res.StatusCode)
			}
		}
	}
	// Positive control: the proxy does forward the sign-in POST under the lease.
	r, _ := http.NewRequest("POST", site+"/login", strings.NewReader("user=demo&password="+hostilePassword))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	pc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if res, err := pc.Do(r); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the sign-in POST through the proxy under the lease: %v %v, want 303", res, err)
	} else {
		res.Body.Close()
	}

	// The person signs in: Tab to the user field, type, Tab, type, Enter.
	for _, in := range []string{`{"kind":"key","key":"Tab"}`, `{"kind":"text","text":"demo"}`, `{"kind":"key","key":"Tab"}`,
		`{"kind":"text","text":"` + hostilePassword + `"}`, `{"kind":"key","key":"Enter"}`} {
		if r := do(t, "POST", base+"/input", in, owner); r.code != http.StatusNoContent {
			t.Fatalf("input %s: %d %s", in, r.code, r.body)
		}
	}
	// The signed-in page acts by itself during the lease: its writes and its way off the site are
	// denied by the bridge.
	// (Denied, and never allowed first: a write the bridge let go would be refused by the proxy
	// and noted as denied after it.)
	deniedBy := func(method, prefix string) bool {
		denied := false
		for _, d := range g.Decisions() {
			if d.Method == method && strings.HasPrefix(d.URL(), prefix) {
				if d.Verdict == policy.Allow {
					return false
				}
				denied = true
			}
		}
		return denied
	}
	if !testutil.Eventually(30*time.Second, func() bool {
		return deniedBy("POST", site+"/records/SYN-0013/delete") && deniedBy("PUT", site+"/login") && deniedBy("GET", canary+"/nav")
	}) {
		t.Errorf("the page's own writes and navigation during the lease were not all denied by the bridge: %+v", g.Decisions())
	}
	if n := modelTurns(); n != atLease {
		t.Errorf("the model was asked %d times during the lease, want 0 (its tools are paused)", n-atLease)
	}
	if r := do(t, "POST", base+"/release", `{}`, owner); r.code != http.StatusOK {
		t.Fatalf("release: %d %s", r.code, r.body)
	}
	res := waitResult(t, ts.URL, c.ID)
	if res.Status != coordinator.StatusAnswered {
		t.Errorf("status %s (%s), want answered after the sign-in", res.Status, res.Reason)
	}
	// Each crafted step is denied before and after the lease.
	denied := 0
	for _, st := range res.Steps {
		if st.Verdict == policy.Deny && (st.Tool == "open_url" || st.Tool == "submit_form") {
			denied++
		}
	}
	if denied < 2*len(crafted) {
		t.Errorf("%d model steps denied, want the %d crafted ones: %+v", denied, 2*len(crafted), res.Steps)
	}
	mutations, logins, hits := h.counts()
	if len(mutations) != 0 || hits != 0 {
		t.Errorf("writes reached the site %q, the other origin was reached %d times; want none", mutations, hits)
	}
	if logins != 2 {
		t.Errorf("%d sign-ins reached the site, want 2 (the proxy's positive control and the person's)", logins)
	}
}
