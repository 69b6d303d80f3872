package web

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/runner"
)

// What the page says once nobody but the agent is in control of the run's browser (takeover.js).
const (
	bannerBack  = "the agent has the browser again; nobody else is in control"
	bannerEnded = "the run has ended; its browser is closed"
)

// Live-view placeholders (render.js viewText), by what happened.
const (
	viewDenied    = "No page open: the denied request was decided before any browser work, so the browser never moved."
	viewWithheld  = "Sign-in page: the live view is withheld and nothing on the page was read."
	viewHandedOff = "Handed back: the agent reads nothing of the page the person used, and opens the page it needs again."
)

// checkCards: each preset card says what its run shows and how it ends, as the server runs it.
func checkCards(t *testing.T, page playwright.Page, s *Server) {
	t.Helper()
	for _, p := range s.presetsJSON() {
		card := page.Locator(`button[data-preset="` + p.Name + `"]`)
		if p.Shows == "" {
			t.Errorf("preset %s: no text says what it shows", p.Name)
		}
		must(t, p.Name+" card shows", expect.Locator(card.Locator(".preset-shows")).ToHaveText(p.Shows))
		want := "Ends " + strings.ToLower(statusWords[p.Expect]) + "."
		if p.ExpectSignedIn != "" {
			want = "Ends " + strings.ToLower(statusWords[p.ExpectSignedIn]) + " once you sign in; otherwise " + strings.ToLower(statusWords[p.Expect]) + "."
		}
		must(t, p.Name+" card expects", expect.Locator(card.Locator(".preset-expect")).ToHaveText(want))
	}
}

// statusWords are the page's names of the statuses (render.js STATUS).
var statusWords = map[coordinator.Status]string{
	"answered": "Answered", "uncertain": "Uncertain", "blocked": "Blocked", "human_action_required": "Human action required",
}

// checkEnded holds the page, once preset p's run has ended, to the run: the title is the card's,
// the status the one the card promised (signedIn: the visitor signed in), every step is shown from
// the first, no start phase claims a time it did not take, "sources conflict" is said once, and a
// takeover panel says the run has ended.
func checkEnded(t *testing.T, page playwright.Page, p PresetJSON, signedIn bool) {
	t.Helper()
	want := p.Expect
	if signedIn {
		want = p.ExpectSignedIn
	}
	must(t, "the status the card promised", expect.Locator(page.Locator(`#result-body .result-view[data-status="`+string(want)+`"]`)).ToBeVisible())
	must(t, "the card's title", expect.Locator(page.Locator("#run-title")).ToHaveText(p.Title))
	must(t, "every step shown", expect.Locator(page.Locator("#steps")).ToHaveClass(regexp.MustCompile(`\bsteps-all\b`)))
	cut, err := page.Locator("#steps").Evaluate("el => el.scrollHeight - el.clientHeight", nil)
	must(t, "steps box", err)
	if n, _ := cut.(int); n > 1 {
		t.Errorf("the ended run's steps box hides %d px of its steps", n)
	}
	phases, err := page.Locator("#phases li").AllTextContents()
	must(t, "phases", err)
	for _, ph := range phases {
		if strings.Contains(ph, "0.0 s") {
			t.Errorf("start phase %q claims a time of 0.0 s", ph)
		}
	}
	status, err := page.Locator(".result-status").TextContent()
	must(t, "status line", err)
	if strings.Count(status, "sources conflict") > 1 {
		t.Errorf("the status line says it twice: %q", status)
	}
	if v, _ := page.Locator("#takeover").IsVisible(); v {
		must(t, "the takeover banner at the end", expect.Locator(page.Locator("#takeover-banner")).ToHaveText(bannerEnded))
	}
}

// checkAnswerPaired: an answered result shows each field's answer beside the value every source
// gave it, under the source's number; the sources list the same numbers.
func checkAnswerPaired(t *testing.T, page playwright.Page) {
	t.Helper()
	must(t, "record ID row", expect.Locator(page.Locator(".compare tbody tr th").First()).ToContainText("Record ID"))
	rows := page.Locator(".compare tbody tr")
	n, _ := rows.Count()
	if n < 6 {
		t.Errorf("%d fields in the answer table, want the record's six", n)
	}
	for i := range n {
		row := rows.Nth(i)
		if c, _ := row.Locator("td.answer-value").Count(); c != 1 {
			t.Errorf("row %d: no answer value", i)
		}
		if c, _ := row.Locator(`td[data-source^="Source "]`).Count(); c < 2 {
			t.Errorf("row %d: %d source values beside the answer, want both sources", i, c)
		}
	}
	must(t, "sources numbered", expect.Locator(page.Locator(".sources li").First()).ToContainText("Source 1 http://"))
	must(t, "retrieval time", expect.Locator(page.Locator(".sources li").First()).ToContainText("retrieved 20"))
}

// checkFits: at width w the page does not scroll sideways, and no record ID (in a URL or in text)
// is broken across two lines.
func checkFits(t *testing.T, page playwright.Page, w int) {
	t.Helper()
	got, err := page.Evaluate(`() => {
	  const broken = [];
	  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
	    if (!n.parentElement || !n.parentElement.offsetParent) continue;
	    for (const m of n.textContent.matchAll(/SYN-\d{4}/g)) {
	      const r = document.createRange();
	      r.setStart(n, m.index);
	      r.setEnd(n, m.index + m[0].length);
	      const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
	      if (tops.size > 1) broken.push(n.parentElement.textContent);
	    }
	  }
	  return { wide: document.documentElement.scrollWidth, broken };
	}`)
	must(t, "layout", err)
	m := got.(map[string]any)
	if wide, _ := m["wide"].(int); wide > w {
		t.Errorf("at %d px the page is %d px wide: it scrolls sideways", w, wide)
	}
	if b, _ := m["broken"].([]any); len(b) > 0 {
		t.Errorf("at %d px a record ID is broken across lines in %v", w, b)
	}
}

// shotView saves a screenshot of the viewport (the state a visitor sees) as shot does, under name.
func shotView(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(fmt.Sprintf("%s/%s.png", outDir(t), name))}); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// TestPagePhone: a visitor on a 390 px phone with two live runs. A tap on a preset brings the run
// into view; the cards, the header and the simulated banner say which runs are live and count
// them down; once none is left the header says so alone and a simulated preset's recording says
// its decision was real when recorded. Results fit the screen, record IDs whole.
func TestPagePhone(t *testing.T) {
	s, ts := newServer(t, WithLimits(Limits{PerVisitor: 2}), WithPlayback(0, 0))
	page := newPageAt(t, 390, 844)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	checkCards(t, page, s)
	uses := page.Locator(`button[data-preset="lookup"] .preset-uses`)
	must(t, "the card says it uses a live run", expect.Locator(uses).ToHaveText("Uses one of your 2 live runs left."))
	must(t, "health", expect.Locator(page.Locator("#health")).ToHaveText("Live runs are on."))
	shotView(t, page, "phone-presets")
	byName := map[string]PresetJSON{}
	for _, p := range s.presetsJSON() {
		byName[p.Name] = p
	}

	// 1: lookup, live. The run comes into view at the tap.
	must(t, "tap lookup", page.Locator(`button[data-preset="lookup"]`).Click())
	must(t, "the run in view", expect.Locator(page.Locator("#run-title")).ToBeInViewport())
	checkEnded(t, page, byName["lookup"], false)
	checkAnswerPaired(t, page)
	checkFits(t, page, 390)
	must(t, "one live run left", expect.Locator(uses).ToHaveText("Uses your last live run."))
	shotView(t, page, "phone-lookup-run")
	must(t, "to the result", page.Locator("#result").ScrollIntoViewIfNeeded())
	shotView(t, page, "phone-lookup-answer")

	// 2: a simulated preset is one of the live runs, and says so.
	must(t, "tap blocked-write", page.Locator(`button[data-preset="blocked-write"]`).Click())
	must(t, "the run in view", expect.Locator(page.Locator("#run-title")).ToBeInViewport())
	must(t, "simulated counts", expect.Locator(page.Locator("#simulated-banner")).ToContainText("the run counts as one of your live runs"))
	checkEnded(t, page, byName["blocked-write"], false)
	// (This server's fake browser has no live view: the placeholders are held to real runs in
	// TestPagePresets and TestPageTakeover.)
	must(t, "no live view", expect.Locator(page.Locator("#screen-note")).ToHaveText("This run's browser has no live view."))
	checkFits(t, page, 390)
	shotView(t, page, "phone-blocked-write")

	// 3: none left. The header says so once (not "Live runs are on."), the cards say a recording
	// plays, and the simulated recording says its decision was real when recorded.
	must(t, "none left", expect.Locator(page.Locator("#runs-left")).ToHaveText("No live runs left this hour: runs play a recorded real run instead. The next one in 60 min."))
	must(t, "no 'live runs are on' beside it", expect.Locator(page.Locator("#health")).ToBeHidden())
	must(t, "cards say a recording plays", expect.Locator(uses).ToHaveText("Plays a recorded real run: you have no live runs left."))
	must(t, "tap off-site", page.Locator(`button[data-preset="off-site"]`).Click())
	must(t, "recorded", expect.Locator(page.Locator("#live-tag")).ToHaveText("recorded"))
	must(t, "simulated when recorded", expect.Locator(page.Locator("#simulated-banner")).ToContainText("The decision was real when this run was recorded."))
	checkEnded(t, page, byName["off-site"], false)
	checkFits(t, page, 390)
	must(t, "to the top", page.Locator("header").ScrollIntoViewIfNeeded())
	shotView(t, page, "phone-no-live-runs-left")
}

// TestAtSignInURL: while a run waits at a sign-in page, the live view names the page by its origin
// and path only: a query (which could carry what a page or a model put there) is never shown, in
// the event or in GET /api/runs/{id}.
func TestAtSignInURL(t *testing.T) {
	r := newRun("r1", "v", time.Now(), RunInfo{})
	r.atSignIn("http://127.0.0.1:1/login?next=/records/SYN-0013&password=pw-SECRET-1")
	snap := r.snapshot()
	evs, _, _ := r.next(0)
	all := fmt.Sprintf("%+v %s", snap.Frame, evs[len(evs)-1].data)
	if strings.Contains(all, "SECRET") || strings.Contains(all, "next=") {
		t.Errorf("the sign-in page's query reached the live view: %s", all)
	}
	if snap.Frame.URL != "http://127.0.0.1:1/login" || snap.Frame.View != runner.ViewWithheld || snap.Frame.Seq != 0 {
		t.Errorf("frame while waiting: %+v, want the withheld view at http://127.0.0.1:1/login", snap.Frame)
	}
}
