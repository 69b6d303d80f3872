package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/runner"
)

// lookupRecording is the embedded recording of the lookup preset.
func lookupRecording(t *testing.T) runner.Recording {
	t.Helper()
	recs, err := runner.LoadRecordings(presets.Recorded())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Preset == "lookup" {
			return r
		}
	}
	t.Fatal("no lookup recording")
	return runner.Recording{}
}

// TestFrameSeq: GET /frame?seq=N answers frame N of the run, so that a replay can step through
// them; the frame event says which page and which decision it follows.
func TestFrameSeq(t *testing.T) {
	_, ts := newServer(t, WithRecordedOnly(true), WithPlayback(0, 0))
	c := startRun(t, ts.URL, `{"preset":"lookup"}`, nil)
	waitResult(t, ts.URL, c.ID)
	var frames [][]byte
	for _, m := range lookupRecording(t).Timeline {
		if m.Frame != nil {
			frames = append(frames, m.Frame)
		}
	}
	if len(frames) < 2 {
		t.Fatalf("the lookup recording has %d frames, want several", len(frames))
	}
	for i, want := range frames {
		r := do(t, "GET", fmt.Sprintf("%s/frame?seq=%d", ts.URL+c.URL, i+1), "", nil)
		if r.code != 200 || !bytes.Equal(r.body, want) || r.header.Get("Content-Type") != "image/png" {
			t.Errorf("seq=%d: got %d, %d bytes, equal %v; want frame %d of the run", i+1, r.code, len(r.body), bytes.Equal(r.body, want), i+1)
		}
	}
	if r := do(t, "GET", ts.URL+c.URL+"/frame", "", nil); !bytes.Equal(r.body, frames[len(frames)-1]) {
		t.Errorf("no seq: not the latest frame")
	}
	for q, code := range map[string]int{"999": 404, "0": 400, "x": 400, "-1": 400} {
		if r := do(t, "GET", ts.URL+c.URL+"/frame?seq="+q, "", nil); r.code != code {
			t.Errorf("seq=%s: got %d %s, want %d", q, r.code, r.body, code)
		}
	}
	evs, _ := readEvents(t, ts.URL+c.Events, 0)
	for _, ev := range evs {
		if ev.name == EventFrame && strings.Contains(ev.data, `"seq"`) {
			if !strings.Contains(ev.data, `"url":"http://`) || !strings.Contains(ev.data, `"verdict":"allow"`) {
				t.Errorf("frame event without the page and the decision: %s", ev.data)
			}
		}
	}
}

// TestPageLiveView: the live view at 1280 and 390 px wide: at desktop width the frame is shown at
// (nearly) its own width; on a phone, not as a thumbnail but at 70% of its size in a box of the
// screen's width that scrolls sideways, starting where the page's content does; a click shows it at full size; the
// caption names the page and the last request's verdict.
func TestPageLiveView(t *testing.T) {
	_, ts := newServer(t, WithRecordedOnly(true), WithPlayback(0.5, 300*time.Millisecond))
	for _, tc := range []struct {
		width    int
		minFrame float64
		scrolls  bool
	}{{1280, 1000, false}, {390, 890, true}} {
		t.Run(fmt.Sprint(tc.width), func(t *testing.T) {
			page := newPageAt(t, tc.width, 900)
			_, err := page.Goto(ts.URL)
			must(t, "goto", err)
			must(t, "click", page.Locator(`button[data-preset="lookup"]`).Click())
			must(t, "frame", expect.Locator(page.Locator("#frame")).ToBeVisible())
			must(t, "caption url", expect.Locator(page.Locator("#frame-caption .frame-url")).ToContainText("http://"))
			must(t, "caption verdict", expect.Locator(page.Locator("#frame-caption")).ToContainText("last request allowed"))
			box, err := page.Locator("#frame").BoundingBox()
			must(t, "box", err)
			screen, err := page.Locator("#screen").BoundingBox()
			must(t, "screen box", err)
			if box.Width < tc.minFrame || screen.X < 0 || screen.X+screen.Width > float64(tc.width)+0.5 {
				t.Errorf("live view at %d px: frame %.0f px wide in a box at x=%.0f, %.0f px wide; want at least %.0f, the box on screen", tc.width, box.Width, screen.X, screen.Width, tc.minFrame)
			}
			left, err := page.Locator("#screen").Evaluate("el => el.scrollLeft", nil)
			must(t, "scroll", err)
			l, _ := left.(float64)
			if n, ok := left.(int); ok {
				l = float64(n)
			}
			// The demo site's content column starts about 310 px into the 1280 px frame: the phone's
			// view starts just before it, past the white margin.
			if tc.scrolls != (l > 0) || l > 0.7*330 {
				t.Errorf("live view at %d px: scrolled to %v, want scrolled (%v) to the content's left edge, at most %v", tc.width, left, tc.scrolls, 0.7*330)
			}
			checkFits(t, page, tc.width)
			shot(t, page, fmt.Sprintf("page-live-view-%d", tc.width))
			must(t, "enlarge", page.Locator("#frame").Click())
			must(t, "zoom open", expect.Locator(page.Locator("#zoom-img")).ToBeVisible())
			w, err := page.Locator("#zoom-img").Evaluate("img => img.complete ? img.getBoundingClientRect().width : 0", nil)
			must(t, "zoom width", err)
			if got, ok := w.(float64); !ok || got < 1279 {
				if n, ok := w.(int); !ok || n < 1279 {
					t.Errorf("enlarged frame: %v px wide, want its own 1280", w)
				}
			}
			shot(t, page, fmt.Sprintf("page-live-view-%d-enlarged", tc.width))
			must(t, "close", page.Locator("#zoom-close").Click())
			must(t, "zoom closed", expect.Locator(page.Locator("#zoom")).Not().ToBeVisible())
		})
	}
	_ = http.StatusOK
}
