package web

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
)

// expect waits up to a minute: a live run launches a Chromium and drives it.
var expect = playwright.NewPlaywrightAssertions(60_000)

// newPage opens a page in a fresh context of the UI browser. The test fails if the page throws or
// the browser reports a Content Security Policy violation.
func newPage(t *testing.T) playwright.Page {
	t.Helper()
	return newPageAt(t, 1280, 900)
}

// watchPage fails the test on uncaught page errors and CSP violations.
func watchPage(t *testing.T, page playwright.Page) {
	var mu sync.Mutex
	var problems []string
	page.OnConsole(func(m playwright.ConsoleMessage) {
		txt := m.Text()
		if m.Type() == "error" && (strings.Contains(txt, "Content Security Policy") || strings.Contains(txt, "Refused to")) {
			mu.Lock()
			problems = append(problems, "console: "+txt)
			mu.Unlock()
		}
	})
	page.OnPageError(func(err error) {
		mu.Lock()
		problems = append(problems, "page error: "+err.Error())
		mu.Unlock()
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("%s", p)
		}
	})
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a full-page screenshot under tests/out.
func shot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	path := filepath.Join(outDir(t), name+".png")
	if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true)}); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// TestPagePresets picks each preset on the page at 1280 px, with the agent driving a real guarded
// Chromium, and holds what the page says to the run: the cards, the header, the step stream, the
// live view and its placeholders, the takeover banner at each stage, and the final status.
func TestPagePresets(t *testing.T) {
	s, ts := newServer(t, WithLauncher(realLaunch), WithLimits(Limits{PerVisitor: 50}))
	page := newPage(t)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "five presets", expect.Locator(page.Locator("#presets button.preset")).ToHaveCount(5))
	must(t, "limits shown", expect.Locator(page.Locator("#limits")).ToContainText("one run at a time, 50 runs per visitor per hour, $3 of model spend a day"))
	must(t, "health shown", expect.Locator(page.Locator("#health")).ToHaveText("Live runs are on."))
	checkCards(t, page, s)
	must(t, "footer on redirects", expect.Locator(page.Locator("footer")).ToContainText("redirects followed one hop at a time, each hop decided anew"))
	shotView(t, page, "desktop-presets")
	for _, pj := range s.presetsJSON() {
		p, _ := presets.ByName(pj.Name)
		t.Run(p.Name, func(t *testing.T) {
			must(t, "click", page.Locator(`button[data-preset="`+p.Name+`"]`).Click())
			must(t, "title", expect.Locator(page.Locator("#run-title")).ToHaveText(p.Title))
			must(t, "first step", expect.Locator(page.Locator("#steps li").First()).ToBeVisible())
			shot(t, page, "page-"+p.Name+"-during")
			if p.Name == "sign-in" {
				// The demo policy names its sign-in route: the run waits for the visitor, who takes
				// over and hands back without signing in; the page still asks for a password, so the
				// run ends as the card says it does without a sign-in. Each stage says what is
				// happening, and the live view never shows the sign-in page.
				must(t, "paused banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerAgent))
				must(t, "waiting for you", expect.Locator(page.Locator("#takeover-note")).ToContainText("Waiting for you: the agent reached a sign-in page and is paused"))
				must(t, "withheld while waiting", expect.Locator(page.Locator("#screen-note")).ToHaveText(viewWithheld))
				must(t, "no frame while waiting", expect.Locator(page.Locator("#frame")).ToBeHidden())
				shotView(t, page, "desktop-sign-in-waiting")
				must(t, "take over", page.Locator("#takeover-start").Click())
				must(t, "person banner", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(BannerPerson))
				must(t, "in control", expect.Locator(page.Locator("#takeover-note")).ToContainText("You are in control: click into the page and type."))
				shotView(t, page, "desktop-sign-in-in-control")
				must(t, "hand back", page.Locator("#takeover-release").Click())
				must(t, "agent continues", expect.Locator(page.Locator("#takeover-note")).ToContainText("Handed back: the agent continues in the same browser."))
				must(t, "the agent has it again", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(regexp.MustCompile("^("+regexp.QuoteMeta(bannerBack)+"|"+regexp.QuoteMeta(bannerEnded)+")$")))
			}
			result := page.Locator(`#result-body .result-view[data-status="` + string(p.Expect) + `"]`)
			if err := expect.Locator(result).ToBeVisible(); err != nil {
				body, _ := page.Locator("#result-body").TextContent()
				t.Fatalf("final status %s not shown: %v\nresult: %s", p.Expect, err, body)
			}
			must(t, "controls back", expect.Locator(page.Locator(`button[data-preset="lookup"]`)).ToBeEnabled())
			checkEnded(t, page, pj, false)
			checkFits(t, page, 1280)
			shot(t, page, "page-"+p.Name+"-after")
			must(t, "to the run", page.Locator("#run").ScrollIntoViewIfNeeded())
			shotView(t, page, "desktop-"+p.Name+"-ended")

			steps, _ := page.Locator("#steps li").Count()
			denied, _ := page.Locator("#steps li.deny").Count()
			if steps == 0 {
				t.Errorf("no steps shown")
			}
			simulated, _ := page.Locator("#steps li .tag-simulated").Count()
			banner, _ := page.Locator("#simulated-banner").IsVisible()
			if p.Simulated != (simulated > 0) || p.Simulated != banner {
				t.Errorf("simulated labels: %d steps and banner %v, want simulated=%v", simulated, banner, p.Simulated)
			}
			if rec, _ := page.Locator("#recorded-banner").IsVisible(); rec {
				t.Errorf("a live run is labelled recorded")
			}
			switch p.Expect {
			case coordinator.StatusAnswered:
				checkAnswerPaired(t, page)
				n, _ := page.Locator(".sources li").Count()
				if n < 2 {
					t.Errorf("%d sources shown, want the record and its registry B entry", n)
				}
				if denied != 0 {
					t.Errorf("%d denied steps in a lookup", denied)
				}
				// The live view shows the agent's browser: a loaded screenshot.
				must(t, "frame visible", expect.Locator(page.Locator("#frame")).ToBeVisible())
				w, err := page.Locator("#frame").Evaluate("img => img.complete ? img.naturalWidth : 0", nil)
				if err != nil || w.(int) < 100 {
					t.Errorf("live view frame not loaded: width %v, %v", w, err)
				}
			case coordinator.StatusUncertain:
				must(t, "conflict table", expect.Locator(page.Locator("table.conflict")).ToBeVisible())
				must(t, "said once", expect.Locator(page.Locator(".result-status .status")).ToHaveText("Uncertain"))
				n, _ := page.Locator("table.conflict td").Count()
				if n < 2 {
					t.Errorf("conflict shows %d values, want two side by side", n)
				}
			case coordinator.StatusBlocked:
				if denied == 0 {
					t.Errorf("a blocked preset shows no denied step")
				}
				must(t, "no page opened", expect.Locator(page.Locator("#screen-note")).ToHaveText(viewDenied))
			case coordinator.StatusHuman:
				if denied == 0 {
					t.Errorf("the sign-in pause shows no denied step")
				}
				must(t, "withheld view", expect.Locator(page.Locator("#screen-note")).ToHaveText(viewWithheld))
				if v, _ := page.Locator("#frame").IsVisible(); v {
					t.Errorf("a frame is shown at a sign-in page")
				}
			}
		})
	}
}

func TestPageRejectsTwoIDs(t *testing.T) {
	_, ts := newServer(t)
	page := newPage(t)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "fill", page.Locator("#task").Fill("Compare SYN-0001 with SYN-0002"))
	must(t, "submit", page.Locator("#task-run").Click())
	notice := page.Locator("#notice")
	must(t, "message visible", expect.Locator(notice).ToBeVisible())
	must(t, "message text", expect.Locator(notice).ToContainText("more than one record ID (SYN-0001, SYN-0002); name exactly one"))
	must(t, "shown as an error", expect.Locator(notice).ToHaveClass("notice notice-error"))
	if v, _ := page.Locator("#run").IsVisible(); v {
		t.Errorf("a run was shown for a rejected task")
	}
	shot(t, page, "page-two-ids-refused")

	// A good task then runs.
	must(t, "fill", page.Locator("#task").Fill("Look up SYN-0077"))
	must(t, "submit", page.Locator("#task-run").Click())
	must(t, "notice cleared", expect.Locator(notice).ToBeHidden())
	must(t, "uncertain", expect.Locator(page.Locator(`.result-view[data-status="uncertain"]`)).ToBeVisible())
	must(t, "title", expect.Locator(page.Locator("#run-title")).ToHaveText("Your task"))
}

func TestPageRecordedRun(t *testing.T) {
	ledger := newLedger()
	ledger.set(func(l *memLedger) { l.spend[dayKey(time.Now())] = 3.0 })
	_, ts := newServer(t, WithLedger(ledger), WithPlayback(0.5, 400*time.Millisecond))
	page := newPage(t)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "health says paused", expect.Locator(page.Locator("#health")).ToContainText("paused (daily model-spend cap reached)"))
	must(t, "click", page.Locator(`button[data-preset="lookup"]`).Click())
	must(t, "recorded tag", expect.Locator(page.Locator("#live-tag")).ToHaveText("recorded"))
	must(t, "recorded badge", expect.Locator(page.Locator("#run-badges .tag-recorded")).ToHaveText("recorded"))
	must(t, "recorded banner", expect.Locator(page.Locator("#recorded-banner")).ToContainText("Recorded run: live runs are paused (daily model-spend cap reached)"))
	must(t, "frame", expect.Locator(page.Locator("#frame")).ToBeVisible())
	shot(t, page, "page-recorded-during")
	must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible())
	must(t, "meta says recorded", expect.Locator(page.Locator(".result-view .meta")).ToContainText("recorded 20"))
	shot(t, page, "page-recorded-after")
}

// TestPageBusy: two visitors at once. While one visitor's live run is held, the second plays a
// recording labelled busy and is offered the live run to watch; watching follows that run,
// read-only, to its end.
func TestPageBusy(t *testing.T) {
	g := newGate()
	_, ts := newServer(t, WithLauncher(g.launch), WithPlayback(0.2, 200*time.Millisecond))
	first := newPage(t)
	_, err := first.Goto(ts.URL)
	must(t, "goto first", err)
	must(t, "first clicks", first.Locator(`button[data-preset="lookup"]`).Click())
	<-g.started
	must(t, "first is live", expect.Locator(first.Locator("#live-tag")).ToHaveText("live"))
	page := newPage(t)
	_, err = page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "click", page.Locator(`button[data-preset="off-site"]`).Click())
	must(t, "recorded tag", expect.Locator(page.Locator("#live-tag")).ToHaveText("recorded"))
	must(t, "busy banner", expect.Locator(page.Locator("#recorded-banner")).ToContainText("Recorded run: the live browser is busy with another visitor's run (busy: one live run at a time; 1 running, 0 waiting)"))
	must(t, "recorded when", expect.Locator(page.Locator("#recorded-banner")).ToContainText("This is a real run recorded 20"))
	must(t, "watch offered", expect.Locator(page.Locator("#watch-live")).ToBeVisible())
	must(t, "recorded result", expect.Locator(page.Locator(`.result-view[data-status="blocked"]`)).ToBeVisible())
	shot(t, page, "page-busy")
	must(t, "watch", page.Locator("#watch-live").Click())
	must(t, "spectator banner", expect.Locator(page.Locator("#spectator-banner")).ToBeVisible())
	must(t, "watching the live run", expect.Locator(page.Locator("#run-state")).ToHaveText("Running…"))
	must(t, "the live run's task", expect.Locator(page.Locator("#run-title")).ToHaveText("Look up a record"))
	g.open()
	must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible())
	must(t, "the first visitor too", expect.Locator(first.Locator(`.result-view[data-status="answered"]`)).ToBeVisible())
	must(t, "no live view", expect.Locator(page.Locator("#screen-note")).ToContainText("no live view"))
}

// TestPageSixRuns: one visitor runs six presets in a row: the page counts the live runs down, and
// the sixth plays a recording labelled with the visitor limit and when it was recorded.
func TestPageSixRuns(t *testing.T) {
	_, ts := newServer(t, WithPlayback(0, 0))
	page := newPage(t)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	must(t, "five left", expect.Locator(page.Locator("#runs-left")).ToHaveText("5 live runs left this hour."))
	var order []coordinator.Preset
	for _, n := range []string{"lookup", "blocked-write", "off-site", "sign-in", "conflicting-sources", "lookup"} {
		p, _ := presets.ByName(n)
		order = append(order, p)
	}
	left := []string{"4 live runs left this hour.", "3 live runs left this hour.", "2 live runs left this hour.", "1 live run left this hour.", "No live runs left this hour: runs play a recorded real run instead. The next one in 60 min."}
	for i, p := range order {
		must(t, "controls enabled", expect.Locator(page.Locator(`button[data-preset="`+p.Name+`"]`)).ToBeEnabled())
		must(t, "click "+p.Name, page.Locator(`button[data-preset="`+p.Name+`"]`).Click())
		must(t, "title", expect.Locator(page.Locator("#run-title")).ToHaveText(p.Title))
		must(t, "result", expect.Locator(page.Locator(".result-view")).ToBeVisible())
		if i < 5 {
			must(t, "live", expect.Locator(page.Locator("#live-tag")).Not().ToHaveText("recorded"))
			must(t, "runs left", expect.Locator(page.Locator("#runs-left")).ToHaveText(left[i]))
			continue
		}
		must(t, "sixth recorded", expect.Locator(page.Locator("#live-tag")).ToHaveText("recorded"))
		must(t, "no 'live runs are on' beside none left", expect.Locator(page.Locator("#health")).ToBeHidden())
		must(t, "visitor banner", expect.Locator(page.Locator("#recorded-banner")).ToContainText("you have used your live runs for now (visitor limit: 5 live runs per hour; next live run in 60 min)"))
		must(t, "with when", expect.Locator(page.Locator("#recorded-banner")).ToContainText("This is a real run recorded 20"))
		must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible())
	}
	shot(t, page, "page-sixth-run-recorded")
}

// TestSidePanel loads the extension unpacked in headless Chromium (the full browser: the headless
// shell loads no extension), points it at a test server that allows its origin, and runs a preset
// from the side panel.
func TestSidePanel(t *testing.T) {
	ext := filepath.Join(repo, "extension")
	bctx, err := pw.Chromium.LaunchPersistentContext(t.TempDir(), playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath:    playwright.String(testbrowser.FullChromium()),
		Headless:          playwright.Bool(true),
		ChromiumSandbox:   playwright.Bool(os.Geteuid() != 0),
		IgnoreDefaultArgs: []string{"--disable-extensions"},
		Args: append(append([]string(nil), chromiumArgs...),
			"--disable-extensions-except="+ext, "--load-extension="+ext,
			"--disable-features=DisableLoadExtensionCommandLineSwitch"),
		Viewport: &playwright.Size{Width: 420, Height: 900},
	})
	must(t, "launch with the extension", err)
	t.Cleanup(func() { bctx.Close() })
	var sw playwright.Worker
	if ws := bctx.ServiceWorkers(); len(ws) > 0 {
		sw = ws[0]
	} else {
		v, err := bctx.WaitForEvent("serviceworker", playwright.BrowserContextWaitForEventOptions{Timeout: playwright.Float(20_000)})
		must(t, "the extension's service worker", err)
		sw = v.(playwright.Worker)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(sw.URL(), "chrome-extension://"), "/")
	if len(id) != 32 {
		t.Fatalf("extension id from %q: %q", sw.URL(), id)
	}
	origin := "chrome-extension://" + id
	_, ts := newServer(t, WithLauncher(realLaunch), WithAllowedOrigins(origin))

	page, err := bctx.NewPage()
	must(t, "page", err)
	watchPage(t, page)
	_, err = page.Goto(origin + "/options.html")
	must(t, "options", err)
	must(t, "allow-origin hint", expect.Locator(page.Locator("#allow-cmd")).ToHaveText("browser-agent serve --allow-origin "+origin))
	must(t, "default server", expect.Locator(page.Locator("#server-url")).ToHaveValue("http://127.0.0.1:8080"))
	must(t, "fill bad", page.Locator("#server-url").Fill("ftp://example.com/x"))
	must(t, "save bad", page.Locator("#save").Click())
	must(t, "refused", expect.Locator(page.Locator("#status")).ToHaveText("Use an http or https URL."))
	must(t, "fill", page.Locator("#server-url").Fill(ts.URL+"/"))
	must(t, "save", page.Locator("#save").Click())
	must(t, "saved", expect.Locator(page.Locator("#status")).ToHaveText("Saved: "+ts.URL))
	shot(t, page, "extension-options")

	_, err = page.Goto(origin + "/sidepanel.html")
	must(t, "side panel", err)
	must(t, "server shown", expect.Locator(page.Locator("#server")).ToHaveText(ts.URL))
	must(t, "five presets", expect.Locator(page.Locator("#presets button.preset")).ToHaveCount(5))
	must(t, "simulated labelled", expect.Locator(page.Locator("#presets .tag-simulated")).ToHaveCount(2))
	shot(t, page, "extension-sidepanel-presets")
	must(t, "click lookup", page.Locator(`button[data-preset="lookup"]`).Click())
	must(t, "steps stream", expect.Locator(page.Locator("#steps li").First()).ToBeVisible())
	must(t, "answered", expect.Locator(page.Locator(`.result-view[data-status="answered"]`)).ToBeVisible())
	must(t, "frame", expect.Locator(page.Locator("#frame")).ToBeVisible())
	must(t, "fields", expect.Locator(page.Locator(".compare tbody th").First()).ToContainText("Record ID"))
	shot(t, page, "extension-sidepanel-result")
	must(t, "click blocked-write", page.Locator(`button[data-preset="blocked-write"]`).Click())
	must(t, "blocked", expect.Locator(page.Locator(`.result-view[data-status="blocked"]`)).ToBeVisible())
	must(t, "denial stands out", expect.Locator(page.Locator("#steps li.deny")).ToHaveCount(1))
	must(t, "simulated banner", expect.Locator(page.Locator("#simulated-banner")).ToBeVisible())
	shot(t, page, "extension-sidepanel-blocked")
}
