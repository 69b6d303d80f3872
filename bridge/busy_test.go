package bridge

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

// TestBusyMachinePhases: on a machine so busy that a pixel phase's fixed costs outlast its bound
// (busyPhase: every phase waits longer than pixelTime before it lays the page out), the page is
// still read, not withheld whole as "not proven visible in time" after a few phases: a phase that
// decided nothing doubles the next one's bound (phaseTime), and the call's time with it. (CI saw
// a 67 KB Python manual page read as nothing: four phases of 7 s each, none of which shot a band.)
func TestBusyMachinePhases(t *testing.T) {
	t.Parallel()
	s := newSession(t, WithPixelTime(time.Second), func(c *config) {
		c.busyPhase = func(ctx context.Context) error { return sleepCtx(ctx, 1500*time.Millisecond) }
	})
	p, err := s.Open(ctxT(t), testFix.Site+"/big/"+newKey()+"?lines=40")
	if err != nil {
		t.Fatal(err)
	}
	text := p.Text
	if p.More {
		text = readAll(t, s)
	}
	end, err := s.Read(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := end.Account.Withheld[readerjs.WhyUnproven]; n > 0 || !strings.Contains(text, "line-00040") {
		t.Fatalf("a page whose phases outlast their bound: %d characters withheld as %q, last line read %v (account %+v)",
			n, readerjs.WhyUnproven, strings.Contains(text, "line-00040"), end.Account)
	}
}

// TestReadOutOfCallTime: a read of a page already read whose call runs out of time (here every
// evaluation of the page waits for the call's end, as on a machine too busy to answer in it) returns
// what the earlier reads gave, with More and no new text, instead of failing the call (CI: "read:
// credential scan: Page.getFrameTree: context deadline exceeded" failed a read of a long manual
// page); the next read goes on.
func TestReadOutOfCallTime(t *testing.T) {
	t.Parallel()
	var block atomic.Bool
	s := newSession(t, WithNavigationTimeout(6*time.Second), withPhaseGroups(1), func(c *config) {
		c.resolved = func(ctx context.Context, _ CDPSession, _ string) {
			if block.Load() {
				<-ctx.Done()
			}
		}
	})
	p, err := s.Open(ctxT(t), testFix.Site+"/big/"+newKey()+"?lines=400")
	if err != nil {
		t.Fatal(err)
	}
	if !p.More {
		t.Fatalf("Open read the whole 400-line page in one group (%d bytes): no read left to run out of time", len(p.Text))
	}
	block.Store(true)
	c, err := s.Read(ctxT(t), p.Next)
	block.Store(false)
	if err != nil {
		t.Fatalf("a read whose call ran out of time failed: %v", err)
	}
	if !c.More || c.Text != "" || c.Next != p.Next {
		t.Fatalf("a read out of its call's time: More %v, %d bytes, Next %d; want More, nothing new, Next %d", c.More, len(c.Text), c.Next, p.Next)
	}
	if text := readAll(t, s); !strings.Contains(text, "line-00400") {
		t.Fatalf("the reads after it did not reach the page's end (%d bytes)", len(text))
	}
}

// TestRevealInOrder: a read whose phase stops before its end (here after two groups of bands, as
// one out of time stops) still moves on through a page whose early run only a reveal can show (a
// line past a scroll container's edge): the pass stops at that run, the reveal shows it, and the
// next read goes on after it. Before, every phase proved the runs after it and stopped before its
// reveals, the text after the run was held back each time, and the page never got past it.
func TestRevealInOrder(t *testing.T) {
	t.Parallel()
	s := newSession(t, withPhaseGroups(2), WithChunkSize(2048))
	var b strings.Builder
	b.WriteString(`<p>REVEAL-TOP first line</p><div style="height:60px;overflow:auto;border:1px solid #000"><p>in the box</p>` +
		`<p style="margin-top:400px">REVEAL-BOXTAIL past the box's edge</p></div>`)
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "<p>line-%03d the quick brown fox jumps over the lazy dog</p>\n", i)
	}
	if _, err := s.Open(ctxT(t), visURL(b.String(), "")); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	off, reads := 0, 0
	for ; reads < 80; reads++ {
		c, err := s.Read(ctxT(t), off)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		text.WriteString(c.Text)
		if !c.More {
			break
		}
		off = c.Next
	}
	got := text.String()
	if !strings.Contains(got, "REVEAL-BOXTAIL") || !strings.Contains(got, "line-400") {
		t.Fatalf("after %d reads: the box's hidden line read %v, the page's last line read %v (%d bytes, next %d)",
			reads, strings.Contains(got, "REVEAL-BOXTAIL"), strings.Contains(got, "line-400"), len(got), off)
	}
}

// TestReadPhaseNotLaidOut: a read whose one phase ran out of time before it laid the page out
// (here it waits for the phase's end, as a phase on a machine too busy to lay out a long page in
// it; CI: the last read of a live page as its run's time ran out) says what is true of the page:
// what earlier reads handed out, and the rest not decided yet. Before, it called the whole page
// withheld "in a frame not read", and handed out nothing so far.
func TestReadPhaseNotLaidOut(t *testing.T) {
	t.Parallel()
	var block, blocked atomic.Bool
	// Without the read ahead: its phase would meet the hook's block too.
	s := newSession(t, WithPixelTime(2*time.Second), WithReadAhead(false), func(c *config) {
		c.busyPhase = func(ctx context.Context) error {
			if block.Load() {
				blocked.Store(true)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
	})
	p, err := s.Open(ctxT(t), testFix.Site+"/big/"+newKey()+"?lines=400")
	if err != nil {
		t.Fatal(err)
	}
	if !p.More || p.Account.Handed == 0 {
		t.Fatalf("Open handed out %d characters, More %v: want the first part of a longer page", p.Account.Handed, p.More)
	}
	// The reads go on until one runs a phase (the chunks the last one proved are read first):
	// that phase waits for its end, and the read's call ends soon after it.
	var c Chunk
	before := p.Account.Handed
	for off := p.Next; !blocked.Load(); off = c.Next {
		if !c.More && off != p.Next {
			t.Fatalf("the page was read to its end (%d) without another phase", off)
		}
		before = c.Account.Handed
		block.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err = s.Read(ctx, off)
		cancel()
		block.Store(false)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
	}
	if n := c.Account.Withheld[readerjs.WhyFrame]; n > 0 || c.Account.Handed < before || !c.More {
		t.Fatalf("a read whose phase laid nothing out: %d characters withheld %q, %d handed out so far (before it: %d), More %v; want none withheld so, what was handed before, More",
			n, readerjs.WhyFrame, c.Account.Handed, before, c.More)
	}
	if text := readAll(t, s); !strings.Contains(text, "line-00400") {
		t.Fatalf("the reads after it did not reach the page's end (%d bytes)", len(text))
	}
}
