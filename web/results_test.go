package web

import (
	"context"
	"sync"
	"testing"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/runner"
)

// TestRecordedOutcome: the final step of a recorded run shows how the run ended (the step's
// Outcome, coordinator/step_test.go).
func TestRecordedOutcome(t *testing.T) {
	recs, err := runner.LoadRecordings(presets.Recorded())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Preset != "conflicting-sources" {
			continue
		}
		last := r.Result.Steps[len(r.Result.Steps)-1]
		if last.Outcome() != coordinator.StatusUncertain {
			t.Errorf("recorded %s: last step outcome %q, want uncertain", r.Preset, last.Outcome())
		}
	}
}

// idRecorder keeps the IDs runs began under.
type idRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *idRecorder) BeginRun(_ context.Context, rr audit.Run) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := rr.ID
	if id == "" {
		id = "audit-made-this-one"
	}
	r.ids = append(r.ids, id)
	return id, nil
}
func (r *idRecorder) AddStep(context.Context, audit.Step) error  { return nil }
func (r *idRecorder) FinishRun(context.Context, audit.Run) error { return nil }

// TestOneRunID: the API's run ID is the audit store's, with and without a recorder.
func TestOneRunID(t *testing.T) {
	rec := &idRecorder{}
	_, ts := newServer(t, WithRecorder(rec))
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	res := waitResult(t, ts.URL, c.ID)
	rec.mu.Lock()
	ids := append([]string(nil), rec.ids...)
	rec.mu.Unlock()
	if len(c.ID) != 16 || res.RunID != c.ID || len(ids) != 1 || ids[0] != c.ID {
		t.Errorf("run IDs: API %q, result %q, audit %v; want one ID", c.ID, res.RunID, ids)
	}
	_, ts2 := newServer(t)
	c = startRun(t, ts2.URL, `{"preset":"lookup"}`, nil)
	if res := waitResult(t, ts2.URL, c.ID); res.RunID != c.ID {
		t.Errorf("without a recorder: API %q, result %q", c.ID, res.RunID)
	}
}

// TestPageUncertain: the uncertain result shows every field, agreeing and conflicting, with the
// value from each source; the final step says uncertain, not denied; on a 390 px screen the table
// stacks and both conflicting values are on screen.
func TestPageUncertain(t *testing.T) {
	_, ts := newServer(t)
	for _, width := range []int{1280, 390} {
		t.Run(map[int]string{1280: "desktop", 390: "phone"}[width], func(t *testing.T) {
			page := newPageAt(t, width, 900)
			_, err := page.Goto(ts.URL)
			must(t, "goto", err)
			must(t, "click", page.Locator(`button[data-preset="conflicting-sources"]`).Click())
			must(t, "uncertain", expect.Locator(page.Locator(`.result-view[data-status="uncertain"]`)).ToBeVisible())
			rows := page.Locator("table.compare tbody tr")
			must(t, "every field", expect.Locator(rows).ToHaveCount(6))
			must(t, "one conflict", expect.Locator(page.Locator("table.compare tr.row-conflict")).ToHaveCount(1))
			must(t, "five agree", expect.Locator(page.Locator("table.compare tr.row-agree")).ToHaveCount(5))
			status := page.Locator(`table.compare tr[data-field="Status"] td`)
			must(t, "both values", expect.Locator(status).ToHaveText([]string{"Closed", "Active"}))
			must(t, "agreeing Name from both", expect.Locator(page.Locator(`table.compare tr[data-field="Name"] td`)).ToHaveCount(2))
			last := page.Locator("#steps li").Last()
			must(t, "final step by outcome", expect.Locator(last).ToHaveAttribute("data-outcome", "uncertain"))
			must(t, "final step text", expect.Locator(last.Locator(".verdict")).ToHaveText("uncertain"))
			must(t, "no denial", expect.Locator(page.Locator("#steps li.deny")).ToHaveCount(0))
			must(t, "step count", expect.Locator(page.Locator("#step-count")).ToHaveText("(4 steps)"))
			for i := 0; i < 2; i++ {
				box, err := status.Nth(i).BoundingBox()
				must(t, "value box", err)
				if box == nil || box.X < 0 || box.X+box.Width > float64(width)+0.5 {
					t.Errorf("value %d of Status at %+v, not within %d px", i+1, box, width)
				}
			}
			shot(t, page, "page-uncertain-"+map[int]string{1280: "1280", 390: "390"}[width])
		})
	}
	page := newPageAt(t, 1280, 900)
	_, err := page.Goto(ts.URL)
	must(t, "goto", err)
	got, err := page.Evaluate(`import("/static/render.js").then(m => [m.plural(1, "step"), m.plural(2, "step"), m.plural(0, "step")])`, nil)
	must(t, "plural", err)
	if w := []any{"1 step", "2 steps", "0 steps"}; len(got.([]any)) != 3 || got.([]any)[0] != w[0] || got.([]any)[1] != w[1] || got.([]any)[2] != w[2] {
		t.Errorf("plural: got %v, want %v", got, w)
	}
}

// newPageAt is newPage with a viewport of w×h.
func newPageAt(t *testing.T, w, h int) playwright.Page {
	t.Helper()
	bctx, err := ui.NewContext(playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: w, Height: h}})
	if err != nil {
		t.Fatalf("new context: %v", err)
	}
	t.Cleanup(func() { bctx.Close() })
	page, err := bctx.NewPage()
	if err != nil {
		t.Fatalf("new page: %v", err)
	}
	watchPage(t, page)
	return page
}
