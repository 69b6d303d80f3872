package bridge

import (
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// TestVisibilityMovers: transparent text over what draws by itself (an animated image, as an
// element and as a background) is not read, and text beside it is. The page's clocks do not stop
// such a thing, and no number of shots tells its change from a run's paint (the four-frame
// proof's A and A2 can meet the same frame of an image that flickers): its box is no evidence.
// The positive control is the same pages with what draws by itself trusted (trustMovers): the
// hidden marker is read, so the pages do change between the shots and the check is what holds.
func TestVisibilityMovers(t *testing.T) {
	t.Parallel()
	src := testutil.FlickerGIF(320, 28)
	type moverCase struct {
		name, body string
		visible    bool
	}
	cases := []moverCase{
		{name: "over an animated image", body: `<div style="position:relative;width:320px;height:28px"><img alt="" src="` + src + `" style="position:absolute;left:0;top:0;width:320px;height:28px"><span style="position:absolute;left:4px;top:4px;color:transparent;font:16px monospace">{M}</span></div>`},
		{name: "beside an animated image", visible: true, body: `<p><img alt="" src="` + src + `" style="width:40px;height:20px;vertical-align:middle"> {M}</p>`},
		{name: "over an animated background", body: `<div style="width:320px;height:28px;background:url(` + src + `)"><span style="position:relative;left:4px;top:4px;color:transparent;font:16px monospace">{M}</span></div>`},
	}
	// tries reads of each page, guarded; the positive control reads until the marker is read, at
	// most controlTries times: whether the two shots meet different frames of the image is timing.
	// The full browser met them within 6 reads; the headless shell, which draws a frame when one
	// is asked for, in about one read of 20 (in 1 to 79 reads over 12 tries): 400 reads leave the
	// control unarmed about once in 10^9 (a read is about 0.2 s; an armed control stops early).
	const tries, controlTries = 6, 400
	count := func(s *Session, c moverCase, i, tries int, untilRead bool) int {
		n := 0
		for k := range tries {
			m := visMarker(60+i*controlTries+k, false)
			if _, err := s.Open(ctxT(t), visURL(c.body, m)); err != nil {
				t.Fatalf("%s: Open: %v", c.name, err)
			}
			if strings.Contains(readAll(t, s), m) {
				n++
				if untilRead {
					t.Logf("%s: the control read the hidden marker in read %d", c.name, k+1)
					return n
				}
			}
		}
		return n
	}
	guarded, control := newSession(t), newSession(t, func(c *config) { c.trustMovers = true })
	for i, c := range cases {
		if c.visible {
			if n := count(guarded, c, i, tries, false); n != tries {
				t.Errorf("%s: the visible marker was read in %d of %d reads", c.name, n, tries)
			}
			continue
		}
		if n := count(control, c, i, controlTries, true); n == 0 {
			t.Errorf("%s: NOT ARMED: the two-frame proof forced never read the hidden marker in %d reads", c.name, controlTries)
		}
		if n := count(guarded, c, i, tries, false); n > 0 {
			t.Errorf("%s: the hidden marker was read in %d of %d reads", c.name, n, tries)
		}
	}
}
