package adversarial

import (
	"encoding/base64"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// fonts: lying web fonts (issue 40). The marker is page text drawn in a web font whose glyphs
// show a person other characters: every letter and digit as x, the letters permuted (ROT13), the
// digits swapped, or another sentence altogether. The font is served inline (a data: URL in the
// @font-face) and as a file from the site. The control is the naive reader, which hands over the
// DOM's text; the guarded reader must withhold the run.
func fontCases() []*tcase {
	sentence, err := testutil.Sentence(Marker, "New sweets onsets ooze")
	if err != nil {
		panic(err)
	}
	var cs []*tcase
	for _, l := range []struct {
		name string
		lie  testutil.Lie
	}{{"one shape", testutil.OneShape()}, {"letter permutation", testutil.Rot13()}, {"digits only", testutil.DigitSwap()}, {"another sentence", sentence}} {
		b, err := testutil.LyingFont(testutil.BaseFont, l.lie)
		if err != nil {
			panic(err)
		}
		body := func(src string) string {
			return recordDL + `<style>@font-face{font-family:L;src:url(` + src + `)}</style><p>The record is filed.</p><p style="font-family:L,sans-serif">{marker}</p>`
		}
		inline := one("fonts", l.name+" inline", html(body("data:font/ttf;base64,"+base64.StdEncoding.EncodeToString(b))), read, links, fields)
		file := one("fonts", l.name+" as a file", html(body("/static/l.ttf")), read, links, fields)
		file.Pages["/static/l.ttf"] = page{Headers: map[string]string{"Content-Type": "font/ttf"}, Body: string(b)}
		cs = append(cs, inline, file)
	}
	for _, c := range cs {
		c.Want = stAny
	}
	return cs
}

// scrollerCases: covered text in scroll containers (issue 40), beyond the vertical box of the
// visibility family: a horizontal one, one nested in another, and one the page scrolls to the
// marker and back. An overlay inside the box covers the marker wherever the box is scrolled.
func scrollerCases() []*tcase {
	hidden := func(name, body string) *tcase {
		c := one("visibility", name, html(recordDL+body), read, fields)
		return c
	}
	return []*tcase{
		hidden("scroll container: horizontal, overlay on top", `<div style="width:200px;overflow-x:auto;white-space:nowrap"><span>left of the box</span><span style="display:inline-block;width:2000px"></span>`+advOverlay+`</div>`),
		hidden("scroll container: nested, overlay on top", `<div style="height:120px;overflow:auto"><p>outer top</p><div style="height:1500px"></div>`+advScrolled(advOverlay)+`</div>`),
		hidden("scroll container: scrolled to the marker and back", `<div id=b style="height:80px;overflow:auto"><p>top of the box</p><div style="height:2000px"></div><div id=m>`+advOverlay+`</div></div>`+
			`<script>const b=document.getElementById('b');b.scrollTop=b.scrollHeight;setTimeout(()=>{b.scrollTop=0},50)</script>`),
		hidden("scroll container: horizontal and vertical, gradient", `<div style="width:200px;height:80px;overflow:auto"><div style="width:3000px;height:3000px;position:relative"><div style="position:absolute;left:2500px;top:2500px">`+advGradient+`</div></div></div>`),
	}
}
