package guard_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// The visibility families of the agent's own suite (bridge/visibility_test.go), one page each:
// text marked HIDDEN-… is in the page's accessibility tree (Playwright MCP's snapshot shows it:
// the positive control) but no person sees it; text marked SEEN-… is seen, and must still reach
// the client through the guard.
var (
	overlay  = `<div style="position:relative"><span>%s</span><div style="position:absolute;inset:-4px;background:#fff"></div></div>`
	gradient = `<div style="background:linear-gradient(#fff,#fff)"><span style="color:#fff">%s</span></div>`
	scrolled = `<div style="height:80px;overflow:auto"><p>top of the box</p><div style="height:2000px"></div>%s</div>`
)

func f(format, token string) string { return fmt.Sprintf(format, token) }

var visPages = map[string]string{
	"covers": `<p>SEEN-covers-1-x</p>` +
		f(overlay, "HIDDEN-covers-1-x") +
		`<div style="position:relative"><span style="position:relative;z-index:0">HIDDEN-covers-2-x</span><div style="position:absolute;inset:-4px;z-index:1;background:#fafafa"></div></div>` +
		`<div style="position:relative"><span>HIDDEN-covers-3-x</span><canvas width="600" height="40" style="position:absolute;left:0;top:-8px;background:#fff"></canvas></div><div style="height:60px"></div>` +
		`<div style="position:relative"><span>SEEN-covers-2-x</span><div style="position:absolute;inset:-4px;background:rgba(255,255,255,.4)"></div></div>`,
	"clipping": `<p>SEEN-clipping-1-x</p>` +
		`<div style="clip-path:inset(0 0 100% 0)">HIDDEN-clipping-1-x</div>` +
		`<div style="overflow:hidden;height:0">HIDDEN-clipping-2-x</div>` +
		`<div style="clip-path:polygon(0 0,0 0,0 0)">HIDDEN-clipping-3-x</div>`,
	"colour": `<p>SEEN-colour-1-x</p><p style="color:#666">SEEN-colour-2-x</p>` +
		f(gradient, "HIDDEN-colour-1-x") +
		`<div style="background:linear-gradient(90deg,#123456,#123456)"><span style="color:#123456">HIDDEN-colour-2-x</span></div>` +
		`<div style="opacity:0">HIDDEN-colour-3-x</div>` +
		`<span style="color:transparent;text-shadow:0 0 0 #fff">HIDDEN-colour-4-x</span>`,
	"transforms": `<p>SEEN-transforms-1-x</p><p style="transform:rotate(2deg)">SEEN-transforms-2-x</p>` +
		`<div style="transform:scale(.08);transform-origin:0 0">HIDDEN-transforms-1-x</div>` +
		`<div style="transform:translateX(-5000px)">HIDDEN-transforms-2-x</div>` +
		`<div style="transform:rotateY(90deg)">HIDDEN-transforms-3-x</div>`,
	"frames": `<p>SEEN-frames-1-x</p>` +
		`<iframe style="width:500px;height:100px" srcdoc="<p>SEEN-frames-2-x</p>"></iframe>` +
		`<iframe style="width:500px;height:100px" srcdoc="<div style='position:relative'><span>HIDDEN-frames-1-x</span><div style='position:absolute;inset:-4px;background:#fff'></div></div>"></iframe>` +
		`<iframe style="width:500px;height:100px;opacity:0" srcdoc="<p>HIDDEN-frames-2-x</p>"></iframe>`,
	"scrollers": `<p>SEEN-scrollers-1-x</p>` +
		f(scrolled, "<p>SEEN-scrollers-2-x</p>") +
		f(scrolled, f(overlay, "HIDDEN-scrollers-1-x")) +
		f(scrolled, f(gradient, "HIDDEN-scrollers-2-x")),
	"far-down": `<p>SEEN-far-down-1-x</p><div style="height:8000px"></div><p>SEEN-far-down-2-x</p>` +
		f(overlay, "HIDDEN-far-down-1-x") +
		`<div style="position:fixed;top:20000px">HIDDEN-far-down-2-x</div>`,
	"attributes": `<p>SEEN-attributes-1-x</p>` +
		`<button aria-label="HIDDEN-attributes-1-x">SEEN-attributes-2-x</button>` +
		`<img alt="HIDDEN-attributes-2-x" src="data:,">` +
		`<label>SEEN-attributes-3-x <input placeholder="x" value="HIDDEN-attributes-3-x" style="color:#fff;background:#fff"></label>`,
	// Hidden links whose text equals visible text elsewhere on the page: the heading and the
	// paragraph are seen, each link is not (off screen, transparent, under a cover).
	"duplicate": `<h1>Sign in</h1><p>Continue</p>` +
		`<a href="/hit/dup-offscreen" style="position:absolute;left:-9999px">Sign in</a>` +
		`<a href="/hit/dup-transparent" style="opacity:0">Sign in</a>` +
		`<div style="position:relative"><a href="/hit/dup-covered">Continue</a><div style="position:absolute;inset:-4px;background:#fff"></div></div>`,
	// An ordinary page: what the client can read and use through the guard.
	"ordinary": `<header><nav><a href="/vis/ordinary">Home</a> <a href="/vis/covers">Covers</a></nav></header>` +
		`<main><h1>SEEN-ordinary-title-x</h1><p>An ordinary paragraph with <a href="/vis/colour">a link</a> and <b>bold words</b>.</p>` +
		`<ul><li>First item</li><li>Second item</li></ul>` +
		`<table><tr><th>Name</th><th>Price</th></tr><tr><td>Tea</td><td>3 EUR</td></tr></table>` +
		`<label>Search <input name=q></label> <button onclick="fetch('/hit/vis-clicked')">SEEN-ordinary-button-x</button>` +
		`<details open><summary>Shipping</summary>Ships in two days.</details></main>`,
}

var visFamilies = []string{"covers", "clipping", "colour", "transforms", "frames", "scrollers", "far-down", "attributes"}

var tokenRE = regexp.MustCompile(`(HIDDEN|SEEN)-[a-z-]+-[0-9a-z]+-x`)

func TestGuardVisibleHTTP(t *testing.T)  { testGuardVisible(t, "http") }
func TestGuardVisibleHTTPS(t *testing.T) { testGuardVisible(t, "https") }

// testGuardVisible: through the guard, no hidden text of any family in any tool result, and the
// seen text and the refs of an ordinary page still there; each page's hidden text through
// Playwright MCP unguarded (the positive control).
func testGuardVisible(t *testing.T, scheme string) {
	s := startSite(t, scheme)
	g := guarded(t, s)
	u := unguarded(t, s)
	for _, fam := range append(visFamilies, "ordinary") {
		t.Run(fam, func(t *testing.T) {
			g, u := g.with(t), u.with(t)
			url := s.URL + "/vis/" + fam
			want := tokenRE.FindAllString(visPages[fam], -1)
			u.mustCall("browser_navigate", map[string]any{"url": url})
			control := u.mustCall("browser_snapshot", nil)
			g.mustCall("browser_navigate", map[string]any{"url": url})
			got := g.mustCall("browser_snapshot", nil)
			for _, tok := range want {
				if !strings.Contains(control, tok) {
					t.Errorf("unguarded: %s is not in the snapshot: the case proves nothing\n%s", tok, control)
				}
				hidden := strings.HasPrefix(tok, "HIDDEN")
				if hidden && strings.Contains(got, tok) {
					t.Errorf("through the guard: hidden %s reached the client\n%s", tok, got)
				}
				if !hidden && !strings.Contains(got, tok) {
					t.Errorf("through the guard: seen %s is missing\n%s", tok, got)
				}
			}
		})
	}
	t.Run("a hidden link whose text is seen elsewhere", func(t *testing.T) {
		// Each snapshot text is proven by its own element: the seen heading's "Sign in" does
		// not prove a hidden link's.
		g, u := g.with(t), u.with(t)
		url := s.URL + "/vis/duplicate"
		u.mustCall("browser_navigate", map[string]any{"url": url})
		control := u.mustCall("browser_snapshot", nil)
		g.mustCall("browser_navigate", map[string]any{"url": url})
		got := pageData(t, g.mustCall("browser_snapshot", nil))
		for _, l := range []string{`link "Sign in"`, `link "Continue"`} {
			if n := strings.Count(control, l); n < 1 {
				t.Errorf("unguarded: no %s in the snapshot: the case proves nothing\n%s", l, control)
			}
			if strings.Contains(got, l) {
				t.Errorf("through the guard: a hidden %s reached the client\n%s", l, got)
			}
		}
		for _, l := range []string{`heading "Sign in"`, `paragraph [ref=`} {
			if !strings.Contains(got, l) {
				t.Errorf("through the guard: the seen %s is missing\n%s", l, got)
			}
		}
		if !strings.Contains(got, ": Continue") {
			t.Errorf("through the guard: the seen paragraph's text is missing\n%s", got)
		}
	})
	t.Run("an ordinary page's refs stay usable", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/vis/ordinary"})
		g.mustCall("browser_click", map[string]any{"target": g.ref("button", "SEEN-ordinary-button-x"), "element": "button"})
		if !testutil.Eventually(10*time.Second, func() bool { return s.count("GET /hit/vis-clicked") > 0 }) {
			t.Errorf("a click on a ref of a seen button did not happen")
		}
		g.mustCall("browser_type", map[string]any{"target": g.ref("textbox", "Search"), "element": "Search", "text": "tea"})
	})
	t.Run("no hidden text in any result", func(t *testing.T) {
		if g.saw("HIDDEN-") {
			t.Errorf("hidden text reached the guarded client")
		}
	})
	t.Run("share of the ordinary page's text kept", func(t *testing.T) {
		g, u := g.with(t), u.with(t)
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/vis/ordinary"})
		all := snapTexts(u.mustCall("browser_snapshot", nil))
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/vis/ordinary"})
		got := g.mustCall("browser_snapshot", nil)
		kept := 0
		for _, x := range all {
			if strings.Contains(got, x) {
				kept++
			} else {
				t.Logf("withheld: %q", x)
			}
		}
		t.Logf("ordinary page: %d of %d snapshot texts kept through the guard (%.0f%%)", kept, len(all), 100*float64(kept)/float64(max(1, len(all))))
		if len(all) == 0 || kept*10 < len(all)*8 {
			t.Errorf("ordinary page: %d of %d snapshot texts kept, want at least 80%%", kept, len(all))
		}
	})
}

// snapTextRE finds the texts of a snapshot: names in quotes and values after ": ".
var snapTextRE = regexp.MustCompile(`(?m)(?:^\s*- [a-z]+ "((?:[^"\\]|\\.)+)"|^\s*- [a-z]+[^:\n]*: ([^\n]+)$)`)

// snapTexts are the names and text values of a snapshot (not its link addresses).
func snapTexts(text string) []string {
	var out []string
	for _, m := range snapTextRE.FindAllStringSubmatch(text, -1) {
		for _, x := range m[1:] {
			if x != "" && !strings.HasPrefix(x, "/") {
				out = append(out, x)
			}
		}
	}
	return out
}
