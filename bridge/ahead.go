package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
	"github.com/browser-agent/browser-agent/policy"
)

// Reading ahead: once a read has handed out all the text proven so far of a long page, the next
// read would prove more (a pixel phase, seconds on a long page) while the model waits. The
// session proves it at once instead, while the model thinks, on a copy of the page's state. The
// next read serves that copy only when the page made no change since its proof: the reader's
// watch of the page (25_changes.js), begun at the phase's layout, counts every change in every
// frame, and the counts, taken when the phase ended, must be the same when the read comes.
// Otherwise the copy is dropped and the read proves the page as it is. Any other call cancels
// the read ahead and drops it; a read waits for it.

// readAhead is one read ahead of the session's page.
type readAhead struct {
	st     *pageState // the page it read (the session's page when it began)
	cancel context.CancelFunc
	done   chan struct{}
	// Set when it proved more: the page's state with that text, and the page's change counts,
	// by frame, when the proof ended.
	next    *pageState
	changes map[string]int
}

// aheadSlot holds the session's read ahead, if any.
type aheadSlot struct {
	mu  sync.Mutex
	cur *readAhead
}

// take removes and returns the read ahead, nil when none.
func (a *aheadSlot) take() *readAhead {
	a.mu.Lock()
	defer a.mu.Unlock()
	ra := a.cur
	a.cur = nil
	return ra
}

// takeDone removes and returns the read ahead when it has ended; one still running (started
// by another call since this one waited) stays.
func (a *aheadSlot) takeDone() *readAhead {
	a.mu.Lock()
	defer a.mu.Unlock()
	ra := a.cur
	if ra == nil {
		return nil
	}
	select {
	case <-ra.done:
		a.cur = nil
		return ra
	default:
		return nil
	}
}

// lockOp takes the session's operation lock. A read ahead running is waited for when join (a
// read, which serves what it proved), until ctx ends, and cancelled and dropped otherwise.
func (s *Session) lockOp(ctx context.Context, join bool) {
	s.ahead.mu.Lock()
	ra := s.ahead.cur
	if ra != nil && !join {
		s.ahead.cur = nil
	}
	s.ahead.mu.Unlock()
	if ra != nil {
		if join {
			select {
			case <-ra.done:
			case <-ctx.Done():
			}
		}
		ra.cancel()
		<-ra.done
	}
	s.op.Lock()
}

// startAhead proves more of st's page in the background, when the session reads ahead, the page
// is not whole and the read that comes next (at next) would reach past the text proven so far.
func (s *Session) startAhead(st *pageState, next int) {
	if !s.cfg.readAhead || st == nil || st.withheld || st.live || st.whole() || len(st.text)-next >= s.cfg.chunkSize {
		return
	}
	offset := len(st.text)
	ctx, cancel := context.WithCancel(context.Background())
	ra := &readAhead{st: st, cancel: cancel, done: make(chan struct{})}
	s.ahead.mu.Lock()
	if old := s.ahead.cur; old != nil {
		old.cancel()
	}
	s.ahead.cur = ra
	s.ahead.mu.Unlock()
	go func() {
		defer close(ra.done)
		defer cancel()
		s.op.Lock()
		defer s.op.Unlock()
		if ctx.Err() != nil || s.pages.get() != st || s.life.usable() != nil {
			return
		}
		began := time.Now()
		call, stop := context.WithTimeout(ctx, s.cfg.navTimeout)
		defer stop()
		if cur, err := s.current(call); err != nil || cur != st {
			return
		}
		next := *st
		err := s.readOn(call, &next, offset)
		if next.withheld {
			// A credential field found by the read ahead withholds the page itself.
			_ = s.pages.withhold(st, next.field)
			return
		}
		if err != nil || len(next.text) <= len(st.text) && next.whole() == st.whole() || len(next.changes) == 0 {
			return
		}
		// The baseline is the page as its last read saw it (the counts taken in the same
		// evaluation as the text), not as it is now: a change since, even one made the moment
		// the page was thawed, drops the read ahead.
		ra.next, ra.changes = &next, next.changes
		s.cfg.logf("bridge: %s: read ahead: %d bytes proven while the model thought (%s)", policy.CleanURL(st.url), len(next.text)-len(st.text), time.Since(began).Round(time.Millisecond))
	}()
}

// serveAhead puts what a finished read ahead proved into st, the session's page, when it read
// st and the page made no change since its proof. The operation lock is held.
func (s *Session) serveAhead(ctx context.Context, st *pageState) {
	ra := s.ahead.takeDone()
	if ra == nil || ra.next == nil || ra.st != st || st.withheld {
		return
	}
	now, err := s.read.changes(ctx)
	// Every frame the last read saw under the watch must be there with the same count (a frame
	// read with no watch on its document, -1, handed out no text of a proof of it).
	same := err == nil
	for f, n := range ra.changes {
		if m, ok := now[f]; n >= 0 && (!ok || m != n) {
			same = false
		}
	}
	if !same {
		st.live = true
		s.cfg.logf("bridge: %s: read ahead dropped: the page changed since its proof (%v -> %v, %v)", policy.CleanURL(st.url), ra.changes, now, err)
		return
	}
	s.pages.replace(st, ra.next)
}

// cancelAhead cancels a read ahead without waiting for it (Close).
func (s *Session) cancelAhead() {
	if ra := s.ahead.take(); ra != nil {
		ra.cancel()
	}
}

// changes is, by frame, how many changes the page made since the reader's watch began (the
// first layout of the last read): -1 for a frame with no watch on its document.
func (pr *pageReader) changes(ctx context.Context) (map[string]int, error) {
	v, err := pr.view(ctx, nil)
	defer func() { v.close() }()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, f := range v.frames {
		rr, err := pr.evalFrame(ctx, v, f, readerjs.ModeChanges, nil)
		if err != nil {
			return nil, err
		}
		n := -1
		if rr.Changes != nil {
			n = *rr.Changes
		}
		out[f] = n
	}
	return out, nil
}
