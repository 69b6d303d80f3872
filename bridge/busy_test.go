package bridge

import (
	"context"
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
	s := newSession(t, WithPixelTime(time.Second), func(c *config) { c.busyPhase = 1500 * time.Millisecond })
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
