package bridge

import (
	"strings"
	"testing"
)

// TestInkReach: hidden text (white on the page) under another run's ink that reaches past that
// run's box (painted over it) is withheld: the shadow it throws (down, sideways, up and blurred) is that run's ink,
// never the marker's. (The visibility corpus holds stacked accents and a wide stroke too.) The control, the same pages with each run's ink counted
// inside its boxes (noReach), reads every marker: the pages put the other line's ink where the
// marker's box is.
func TestInkReach(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body string }{
		{"thrown shadow", `<div style="font:16px monospace"><p style="margin:0;position:relative;z-index:1;text-shadow:0 40px 0 #000">888888888 visible</p><p style="margin:20px 0 0;color:#fff">{M}</p></div>`},
		{"shadow thrown sideways", `<p style="font:16px monospace;margin:0"><span style="position:relative;z-index:1;text-shadow:160px 0 0 #000">888888888</span><span style="display:inline-block;width:80px"></span><span style="color:#fff">{M}</span></p>`},
		{"blurred shadow thrown up", `<div style="font:16px monospace"><p style="margin:0;color:#fff">{M}</p><p style="margin:16px 0 0;text-shadow:0 -34px 1px #000">888888888 visible</p></div>`},
	}
	for i, c := range cases {
		for _, reach := range []bool{true, false} {
			name := c.name
			if !reach {
				name += ", control without the reach"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newSession(t, func(cf *config) { cf.noReach = !reach })
				m := visMarker(950+i, false)
				p, err := s.Open(ctxT(t), visURL(c.body, m))
				if err != nil {
					t.Fatal(err)
				}
				text := p.Text
				if p.More {
					text += readAll(t, s)
				}
				if read := strings.Contains(text, m); read == reach {
					t.Errorf("marker read %v, want %v (text %q)", read, !reach, text)
				}
			})
		}
	}
}
