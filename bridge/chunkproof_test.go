package bridge

import (
	"fmt"
	"strings"
	"testing"
)

// A read proves the chunk it returns, not the whole page (issue 39): Open proves the first
// screens of a long page and leaves the rest pending; each later read proves more. These tests
// hold its two promises: the text arrives in the page's order, not band by band, and a run
// proven by an earlier read but not yet handed out is proven again before it is (a proof holds
// for the DOM it saw).

// sidebarPage is a long article (n paragraphs) with a sidebar that comes last in the DOM but is
// drawn at the top right, beside the article's first lines, so that the first bands shot hold
// both. script runs at the end.
func sidebarPage(n int, sidebar string) string {
	var b strings.Builder
	b.WriteString(`<div style="margin-right:260px">`)
	for i := range n {
		fmt.Fprintf(&b, "<p>Paragraph %d of the article: the quarterly figures were steady and the notes say so plainly.</p>\n", i)
	}
	b.WriteString(`<p>ARTICLE-END-MARKER</p></div><div id=side style="position:absolute;top:8px;right:8px;width:240px">` + sidebar + `</div>`)
	return b.String()
}

// TestChunkProofOrder: Open of a long page hands out its first chunk with the rest pending, and
// the page read to its end gives the article whole, in order, and the sidebar after it, as the
// page's order has it, though the sidebar was shot with the article's first lines.
func TestChunkProofOrder(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	side := "<p>Sidebar first line SIDE-A.</p><p>Sidebar second line SIDE-B.</p>"
	p, err := s.Open(ctxT(t), visURL(sidebarPage(400, side), visMarker(4700, false)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !p.More || p.Account.Pending == 0 {
		t.Errorf("Open proved the whole page (more %v, pending %d): a read proves the chunk it returns", p.More, p.Account.Pending)
	}
	if strings.Contains(p.Text, "SIDE-A") {
		t.Errorf("Open's first chunk holds the sidebar, which comes after the article: %q", clip(p.Text, 300))
	}
	text := readAll(t, s)
	last := -1
	for i := range 400 {
		at := strings.Index(text, fmt.Sprintf("Paragraph %d of the article", i))
		if at < 0 {
			t.Fatalf("paragraph %d not read", i)
		}
		if at < last {
			t.Fatalf("paragraph %d comes before the one above it", i)
		}
		last = at
	}
	end := strings.Index(text, "ARTICLE-END-MARKER")
	a, b := strings.Index(text, "SIDE-A"), strings.Index(text, "SIDE-B")
	if end < last || a < end || b < a {
		t.Errorf("not in the page's order: last paragraph at %d, article end at %d, sidebar at %d and %d", last, end, a, b)
	}
}

// TestChunkProofProvenAgain: the sidebar, shot (and proven visible) by Open's phase but held
// back for its place in the page's order, is changed after Open: its text replaced by a marker,
// hidden in one case and shown in the other. The hidden marker must reach no read; the shown one
// (the positive control) must, so the later read saw the page as it is then, not as Open's
// phase proved it.
func TestChunkProofProvenAgain(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	for i, c := range []struct {
		name  string
		style string
		want  bool
	}{
		{"hidden after the proof", "color:transparent", false},
		{"control: shown", "color:#000", true},
	} {
		m := visMarker(4710+i, false)
		p, err := s.Open(ctxT(t), visURL(sidebarPage(400, "<p id=sp>Sidebar line SIDE-A.</p>"), m))
		if err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		if !p.More || strings.Contains(p.Text, "SIDE-A") {
			t.Fatalf("%s: NOT ARMED: Open read the whole page or handed out the sidebar", c.name)
		}
		if _, err := s.page.Evaluate(`([m, st]) => { const p = document.getElementById('sp'); p.textContent = m; p.style.cssText = st; }`, []any{m, c.style}); err != nil {
			t.Fatal(err)
		}
		text := readAll(t, s)
		if got := strings.Contains(text, m); got != c.want {
			t.Errorf("%s: marker read %v, want %v", c.name, got, c.want)
		}
		if strings.Contains(text, "SIDE-A") {
			t.Errorf("%s: the sidebar's old text, replaced after Open, was read", c.name)
		}
		if !strings.Contains(text, "ARTICLE-END-MARKER") {
			t.Errorf("%s: the article was not read to its end", c.name)
		}
	}
}

// TestChunkProofLinksSoFar: after Open of a long page, LinksSoFar gives the links of what was
// proven (not the one at the article's end) and says the page is not whole; Links proves the
// page to its end and gives that link too.
func TestChunkProofLinksSoFar(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	page := `<p><a href="/first-link">FIRST-LINK</a></p>` + sidebarPage(400, "") + `<p><a href="/end-link">END-LINK</a></p>`
	if _, err := s.Open(ctxT(t), visURL(page, visMarker(4720, false))); err != nil {
		t.Fatalf("Open: %v", err)
	}
	has := func(ls []Link, text string) bool {
		for _, l := range ls {
			if l.Text == text {
				return true
			}
		}
		return false
	}
	ls, whole, err := s.LinksSoFar(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if whole || !has(ls, "FIRST-LINK") || has(ls, "END-LINK") {
		t.Errorf("LinksSoFar after Open: whole %v, %d links (first %v, end %v)", whole, len(ls), has(ls, "FIRST-LINK"), has(ls, "END-LINK"))
	}
	if ls, err = s.Links(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !has(ls, "FIRST-LINK") || !has(ls, "END-LINK") {
		t.Errorf("Links: %d links (first %v, end %v)", len(ls), has(ls, "FIRST-LINK"), has(ls, "END-LINK"))
	}
	if _, whole, err = s.LinksSoFar(ctxT(t)); err != nil || !whole {
		t.Errorf("LinksSoFar after Links: whole %v, %v", whole, err)
	}
}

// TestChunkProofParagraphWhole: one paragraph many screens long, read to its end, comes out as
// the page draws it, though several reads decided its runs: no line break inside it, words that
// touch still touching ("w7x7"), words apart still one space apart. (Before each read's text was
// put after the last's with a blank line, so the paragraph broke where a read ended.)
func TestChunkProofParagraphWhole(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	const n = 2500 // about 24 KB of text: three reads' chunks
	var page, want strings.Builder
	page.WriteString(`<h1>One long paragraph</h1><p style="width:300px">`)
	for i := range n {
		fmt.Fprintf(&page, "<b>w%d</b>x%d ", i, i)
		if i > 0 {
			want.WriteString(" ")
		}
		fmt.Fprintf(&want, "w%dx%d", i, i)
	}
	page.WriteString("</p><p>After the paragraph.</p>")
	p, err := s.Open(ctxT(t), visURL(page.String(), visMarker(4730, false)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !p.More || p.Account.Pending == 0 {
		t.Fatalf("Open proved the whole page (more %v, pending %d): the paragraph must span reads", p.More, p.Account.Pending)
	}
	text := readAll(t, s)
	start, end := strings.Index(text, "w0x0"), strings.Index(text, "After the paragraph.")
	if start < 0 || end < start {
		t.Fatalf("the paragraph or what follows it not read: %q", clip(text, 300))
	}
	got := strings.TrimSpace(text[start:end])
	if got != want.String() {
		i := 0
		for i < len(got) && i < len(want.String()) && got[i] == want.String()[i] {
			i++
		}
		t.Fatalf("the paragraph differs from the page's at byte %d: got %q, want %q", i, clip(got[max(0, i-40):], 80), clip(want.String()[max(0, i-40):], 80))
	}
}
