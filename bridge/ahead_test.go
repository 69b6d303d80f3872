package bridge

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// aheadDone waits until the session's read ahead has ended and returns it (nil when none ran).
func aheadDone(t *testing.T, s *Session) *readAhead {
	t.Helper()
	s.ahead.mu.Lock()
	ra := s.ahead.cur
	s.ahead.mu.Unlock()
	if ra == nil {
		return nil
	}
	select {
	case <-ra.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the read ahead did not end in 90 s")
	}
	return ra
}

// TestReadAhead: after open_url hands out the first chunk of a long page, the session proves the
// next part while the model thinks, and the next read serves it without a pixel phase of its
// own. When the page changes a paragraph of that part after its proof, the next read must not
// hand out the paragraph's old text: the read ahead is dropped and the page proven as it is now.
// (Red with the change check skipped: the old text was served.)
func TestReadAhead(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{false, true} {
		name := "unchanged"
		if changed {
			name = "changed after its proof"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			phases := 0
			s := newSession(t, func(c *config) {
				c.phase = func(name string, d time.Duration) {
					if name == "pixels" {
						mu.Lock()
						phases++
						mu.Unlock()
					}
				}
			})
			p, err := s.Open(ctxT(t), visURL(changingPage(900, ""), ""))
			if err != nil {
				t.Fatal(err)
			}
			if !p.More {
				t.Fatalf("a 900-paragraph page read whole in its first chunk: %d bytes", len(p.Text))
			}
			ra := aheadDone(t, s)
			if ra == nil || ra.next == nil {
				t.Fatal("no read ahead proved anything after open_url")
			}
			ahead := ra.next.text[p.Next:]
			m := regexp.MustCompile(`Paragraph (\d+) of the report`).FindAllStringSubmatch(ahead, -1)
			if len(m) < 3 {
				t.Fatalf("the read ahead proved %d paragraphs", len(m))
			}
			pick := m[len(m)/2][1] // a paragraph inside the read ahead's text
			old := "Paragraph " + pick + " of the report"
			if changed {
				if _, err := s.page.Evaluate(`(id) => { document.getElementById('p' + id).textContent = 'Rewritten after its proof ' + id; }`, pick); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			phases = 0
			mu.Unlock()
			var b strings.Builder
			for off, i := p.Next, 0; i < 40; i++ {
				c, err := s.Read(ctxT(t), off)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(c.Text)
				if i == 0 {
					mu.Lock()
					n := phases
					mu.Unlock()
					if !changed && n != 0 {
						t.Errorf("the read after open_url ran %d pixel phases of its own; want its read ahead served", n)
					}
				}
				if !c.More {
					break
				}
				off = c.Next
			}
			text := b.String()
			if changed && strings.Contains(text, old+":") {
				t.Errorf("%q, changed after the read ahead proved it, was handed out", old)
			}
			if !changed && !strings.Contains(text, old+":") {
				t.Errorf("%q, proven by the read ahead, was not handed out", old)
			}
			if !strings.Contains(text, "DEEP-END-MARKER") {
				t.Errorf("the page was not read to its end: %d bytes", len(text))
			}
		})
	}
}
