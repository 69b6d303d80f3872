package bridge

import (
	"fmt"
	"strings"
	"testing"
)

// tightCode is a code block as Python's manual draws it (Sphinx, Pygments: 15.44 px monospace,
// line height 120 %): each line's text box is 22 px tall on 18.5 px lines, so it overlaps the
// next line's, and an underscore's glyph lies wholly in that overlap. line0 and line1 are its
// first two lines (HTML).
func tightCode(line0, line1 string) string {
	return `<pre style="font-family:'monospace',monospace;font-size:15.44px;line-height:120%;margin:0;position:relative">` + line0 + "\n" + line1 + "\n</pre>"
}

// TestSplitOverlap: a glyph drawn only where two runs' boxes overlap is read (the two-frame
// proof shoots such runs apart, split), and what hides text there is still withheld. Issue 48:
// Python's nntplib.html and functools.html lost their code's lone underscores ("_, _, first, last,
// _ = s.group(...)"), withheld as hidden; ten lines of the 40-page sample.
func TestSplitOverlap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 8 {
		// Each block a fraction of a pixel lower: where the overlap falls between pixel rows.
		fmt.Fprintf(&b, `<div style="height:%.1fpx"></div>`, 10+float64(i)*0.13)
		b.WriteString(tightCode(fmt.Sprintf(`<span>&gt;&gt;&gt; </span><span>_</span><span>,</span> <span>UL%d</span> <span>_</span> <span>=</span> <span>s.group()</span>`, i),
			`<span>&gt;&gt;&gt; </span><span>resp</span><span>,</span> <span>over</span> <span>=</span> <span>s.xover()</span>`))
	}
	page := b.String()
	count := func(t *testing.T, s *Session) int {
		t.Helper()
		p, err := s.Open(ctxT(t), visURL(page, ""))
		if err != nil {
			t.Fatal(err)
		}
		text := p.Text
		if p.More {
			text += readAll(t, s)
		}
		n := 0
		for i := range 8 {
			if strings.Contains(text, fmt.Sprintf("_, UL%d _ =", i)) {
				n++
			}
		}
		return n
	}
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		if n := count(t, newSession(t)); n != 8 {
			t.Errorf("%d of 8 code lines read with their underscores", n)
		}
	})
	// The control: without the split the page loses them (the page tests what it should).
	t.Run("control without the split", func(t *testing.T) {
		t.Parallel()
		if n := count(t, newSession(t, func(c *config) { c.noSplit = true })); n == 8 {
			t.Errorf("every underscore read without the split: the page does not put them where two runs' boxes overlap")
		}
	})
	// What hides text where boxes overlap is withheld as before, the marker on the first line of a
	// tight block (its box overlaps the second line's); the visible variant is read.
	next := `<span>resp, over = s.xover() and a longer line</span>`
	cases := []struct {
		name, line0 string
		hidden      bool
	}{
		{"visible", `<span>{M}</span>`, false},
		{"visible, overprinted beside", `<span>{M}</span> <span style="position:absolute;left:20ch;top:0">WWWWWWWW</span>`, false},
		{"transparent", `<span style="color:transparent">{M}</span>`, true},
		{"same colour as the page", `<span style="color:#fff">{M}</span>`, true},
		{"under an overlay", `<span>{M}</span><span style="position:absolute;left:0;top:0;width:20ch;height:1.2em;background:#fff"></span>`, true},
		{"overprinted by other text", `<span>{M}</span><span style="position:absolute;left:0;top:0">888888888</span>`, true},
		// Its parent's paint off turns off the child's too (it inherits the fill): the child's
		// ink must count as the child's, not as the marker's.
		{"white on the page, its child's text drawn over it", `<span style="color:#fff">{M}<b style="color:#000;position:absolute;left:0;top:0;font-weight:normal">888888888</b></span>`, true},
		{"overprinted, the other text's line under it", `<span style="position:absolute;left:0;top:0;white-space:pre">WWWWWWWWWW</span><span>{M}</span>`, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t)
			m := visMarker(900+i, false)
			p, err := s.Open(ctxT(t), visURL(tightCode(c.line0, next), m))
			if err != nil {
				t.Fatal(err)
			}
			text := p.Text
			if p.More {
				text += readAll(t, s)
			}
			if got := strings.Contains(text, m); got == c.hidden {
				t.Errorf("marker read %v, want %v (text %q)", got, !c.hidden, text)
			}
		})
	}
}

// TestItalicPunctuation: the punctuation after an italic word is read. The italic glyph's ink
// reaches past its box over the period's (the ink reach), so the period's pixels are evidence
// only in the split's shot with the period's paint alone off; the italic word inside the same
// paragraph inherits that paint and went off with it (Python's uuid.html lost the period of "or
// int." and 42 such characters a page). Its control: without the split the page loses them.
func TestItalicPunctuation(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	words := []string{"int", "hex", "bytes_le", "f", "path", "mode", "key", "value"}
	for i, w := range words {
		// As Sphinx's classic theme sets a paragraph: Arial (Liberation Sans here), 130 %, justified.
		fmt.Fprintf(&b, `<p style="font-family:'Lucida Grande',Arial,sans-serif;line-height:130%%;text-align:justify;width:760px">Line %d: the version argument is optional; if given, the resulting UUID will have its variant and version number set according to RFC 4122, overriding bits in the given the <em>hex</em> or <em>%s</em>.</p>`, i, w)
	}
	page := b.String()
	count := func(t *testing.T, s *Session) (n int, text string) {
		t.Helper()
		p, err := s.Open(ctxT(t), visURL(page, ""))
		if err != nil {
			t.Fatal(err)
		}
		text = p.Text
		if p.More {
			text += readAll(t, s)
		}
		for i, w := range words {
			if strings.Contains(text, fmt.Sprintf("Line %d: the version", i)) && strings.Contains(text+"\n", fmt.Sprintf("the hex or %s.\n", w)) {
				n++
			}
		}
		return n, text
	}
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		if n, text := count(t, newSession(t)); n != len(words) {
			t.Errorf("%d of %d lines read with the period after their italic word:\n%s", n, len(words), text)
		}
	})
	t.Run("control without the split", func(t *testing.T) {
		t.Parallel()
		if n, _ := count(t, newSession(t, func(c *config) { c.noSplit = true })); n == len(words) {
			t.Errorf("every period read without the split: the page does not put them in an italic word's reach")
		}
	})
}
