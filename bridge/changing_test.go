package bridge

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

// Pages that change while they are read (issue 46): every character handed out was proven
// visible in one rendering, and the text handed out is the text that rendering proved; a change
// voids only what it touches, and what it voids is counted withheld, "changed during the read".

// changingPage is a page of n paragraphs, a deep marker in its last one, and script.
func changingPage(n int, script string) string {
	var b strings.Builder
	b.WriteString(`<style>.gone{color:transparent}</style><p id=clock>Updated 00:00:00</p>`)
	for i := range n {
		fmt.Fprintf(&b, "<p id=p%d>Paragraph %d of the report: the quarterly figures were steady and the notes say so plainly.</p>\n", i, i)
	}
	b.WriteString(`<p>DEEP-END-MARKER</p><script>` + script + `</script>`)
	return b.String()
}

// onRestore runs change in a MutationObserver of the page's when the proof takes its marks off
// the page (the attributes the two-frame proof puts on the runs' parents, id's among them) for the
// nth time: after the shots of the nth group of a long page, and before the reader walks the
// text the groups proved; n 0 runs it every time.
func onRestore(id string, n int, change string) string {
	return fmt.Sprintf(`let seen = 0;
new MutationObserver((rs) => {
  if (!rs.some((r) => r.type === 'attributes' && r.attributeName.startsWith('data-browser-agent') && r.target.id === '%s' && r.oldValue !== null)) return;
  seen++;
  if (%d === 0 || seen === %d) { %s }
}).observe(document.body, {attributes: true, subtree: true, attributeOldValue: true});`, id, n, n, change)
}

// TestReaderChangedAfterProof: a paragraph proven visible by the first group of shots gets new
// text (the hidden marker) and is hidden after the second group, before its text is read. The marker must reach no
// read; the page must show that it changed (the positive control: the marker is in the page's
// DOM after the read); the rest of the page is read.
func TestReaderChangedAfterProof(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, change string }{
		{"inline style", `const p = document.getElementById('p3'); p.textContent = '{M}'; p.style.color = 'transparent';`},
		{"class whose rule is in the page", `const p = document.getElementById('p3'); p.textContent = '{M}'; p.className = 'gone';`},
		{"new element in its place", `const p = document.getElementById('p3'); const q = document.createElement('p'); q.textContent = '{M}'; q.style.color = 'transparent'; p.replaceWith(q);`},
		{"hidden child in a proven paragraph", `const s = document.createElement('span'); s.textContent = ' {M}'; s.style.color = 'transparent'; document.getElementById('p3').appendChild(s);`},
	}
	s := newSession(t)
	for i, c := range cases {
		m := visMarker(4600+i, false)
		if _, err := s.Open(ctxT(t), visURL(changingPage(300, onRestore("p200", 2, c.change)), m)); err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		text := readAll(t, s)
		in, err := s.page.Evaluate(`(m) => document.body.textContent.includes(m)`, m)
		if err != nil {
			t.Fatal(err)
		}
		if in != true {
			t.Errorf("%s: NOT ARMED: the page did not change during the read", c.name)
		}
		if strings.Contains(text, m) {
			t.Errorf("%s: the marker, changed and hidden after its proof, was read", c.name)
		}
		if !strings.Contains(text, "DEEP-END-MARKER") || !strings.Contains(text, "Paragraph 250 of the report") {
			end, _ := s.Read(ctxT(t), len(text))
			t.Errorf("%s: the rest of the page was not read (account %+v): %q", c.name, end.Account, clip(text, 300))
		}
	}
}

// TestReaderLivePage: pages that change all the time (a clock ticking every 100 ms, a notice
// appended after a second, a carousel turning every 500 ms) still read: the text at the top and
// the marker at the end reach the model, and what changed is either read as proven or counted
// withheld with its reason.
func TestReaderLivePage(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, script string }{
		{"clock ticking every 100 ms", `let k = 0; setInterval(() => { clock.textContent = 'Updated ' + (++k); }, 100);`},
		{"notice appended after a second", `setTimeout(() => { const d = document.createElement('p'); d.textContent = 'Notice: your settings were saved'; document.body.appendChild(d); }, 1000);`},
		{"carousel turning every 500 ms", `let k = 0; setInterval(() => { const p = document.getElementById('p1'); p.className = (++k % 2) ? 'gone' : ''; p.textContent = 'Slide ' + k; }, 500);`},
		{"changed every time the proof marks the page", onRestore("p100", 0, `clock.textContent = 'Updated ' + seen;`)},
	}
	s := newSession(t)
	for _, c := range cases {
		if _, err := s.Open(ctxT(t), visURL(changingPage(150, c.script), "")); err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		time.Sleep(300 * time.Millisecond)
		text := readAll(t, s)
		end, err := s.Read(ctxT(t), len(text))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "Paragraph 0 of the report") || !strings.Contains(text, "DEEP-END-MARKER") {
			t.Errorf("%s: the top and the end of the page were not both read (account %+v): %q", c.name, end.Account, clip(text, 300))
		}
		if hidden := end.Account.Withheld[readerjs.WhyHidden]; hidden > 200 {
			t.Errorf("%s: %d characters withheld as hidden on a page that hides none (account %+v)", c.name, hidden, end.Account)
		}
		t.Logf("%s: %d bytes read, account %+v", c.name, len(text), end.Account)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestReaderLiveLongPage: a long page (900 paragraphs, read in chunks over several reads) that
// changes all the time is read to its end. A clock that replaces its text every 100 ms: each
// later layout of a read counted the clock's new text node in the place of the old, and the read
// stopped there ("changed between layouts"), handing out nothing, read after read; now that run
// alone is withheld. A carousel that sets display: none on one slide and shows the next every
// 500 ms: an element with no box after the change may have drawn anywhere, so every group of
// shots it turned during counted nothing, and the page was withheld "not proven visible in
// time"; now its box when the shots began is where it drew.
func TestReaderLiveLongPage(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, script string }{
		{"clock ticking every 100 ms", `let k = 0; setInterval(() => { clock.textContent = 'Updated ' + (++k); }, 100);`},
		{"carousel turning every 500 ms", `clock.insertAdjacentHTML('afterend', '<div id=car style="height:3em;overflow:hidden"><p>Slide one</p><p style="display:none">Slide two</p><p style="display:none">Slide three</p></div>');
let k = 0; setInterval(() => { const s = car.children; s[k % 3].style.display = 'none'; s[++k % 3].style.display = ''; }, 500);`},
		// Turning faster than a group of shots is shot: a slide shown and hidden again within one
		// group. It had no box when the group began and has none at its end; where it drew is its
		// box when it was shown (the group's watch takes the boxes of what changed as it changes).
		// Before, every group was voided whole and, on a busy machine, the page withheld.
		{"carousel turning every 40 ms", `clock.insertAdjacentHTML('afterend', '<div id=car style="height:3em;overflow:hidden"><p>Slide one</p><p style="display:none">Slide two</p><p style="display:none">Slide three</p></div>');
let k = 0; setInterval(() => { const s = car.children; s[k % 3].style.display = 'none'; s[++k % 3].style.display = ''; }, 40);`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t)
			if _, err := s.Open(ctxT(t), visURL(changingPage(900, c.script), "")); err != nil {
				t.Fatal(err)
			}
			// At most 40 reads (a quiet machine takes about ten; before, every read handed out nothing).
			var b strings.Builder
			for off, i := 0, 0; i < 40; i++ {
				c, err := s.Read(ctxT(t), off)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(c.Text)
				if !c.More {
					break
				}
				off = c.Next
			}
			text := b.String()
			end, err := s.Read(ctxT(t), len(text))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "Paragraph 0 of the report") || !strings.Contains(text, "Paragraph 450 of the report") || !strings.Contains(text, "DEEP-END-MARKER") {
				t.Errorf("the long page was not read to its end (account %+v): %q", end.Account, clip(text, 300))
			}
			t.Logf("%d bytes read, account %+v", len(text), end.Account)
		})
	}
}
