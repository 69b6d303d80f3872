package bridge

import (
	"context"
	"sync/atomic"
	"time"
)

// activity is the route's request activity: how many requests are in its handlers, and when one
// last started or ended. The settle after load (settle), the quiet before and after a read
// (watch.go) and the end of a sign-in lease (takeover.go) wait on it.
type activity struct {
	inflight   atomic.Int64
	lastActive atomic.Int64 // unix ns
}

// mark marks a request entering (+1) or leaving (-1) the route, or passing it (0).
func (a *activity) mark(delta int64) {
	a.lastActive.Store(time.Now().UnixNano())
	a.inflight.Add(delta)
}

// idle reports whether, at now, no request is in the route's handlers and none started or ended
// for grace after since.
func (a *activity) idle(since, now time.Time, grace time.Duration) bool {
	quietSince := max(since.UnixNano(), a.lastActive.Load())
	return a.inflight.Load() == 0 && now.UnixNano()-quietSince >= int64(grace)
}

// busy reports whether a request is in the route's handlers.
func (a *activity) busy() bool { return a.inflight.Load() > 0 }

// activeSince reports whether a request started or ended at t or after it.
func (a *activity) activeSince(t time.Time) bool { return a.lastActive.Load() >= t.UnixNano() }

// settleQuiet is how long the page's requests must have been quiet after load (none in the
// route's handlers, none started or ended) before Open reads the page early.
const settleQuiet = 30 * time.Millisecond

// settle waits, after the page's load event, for the requests the page makes late (scripts run
// at load, timers, lazy images) to be over: until no request has been in the route's handlers
// for settleQuiet, and at most limit. A page that makes no request after load is read
// settleQuiet after it; a busy page waits the whole settle.
func (a *activity) settle(ctx context.Context, limit time.Duration) error {
	if limit <= 0 {
		return ctx.Err()
	}
	start := time.Now()
	end := start.Add(limit)
	for {
		now := time.Now()
		if !now.Before(end) {
			return ctx.Err()
		}
		if a.idle(start, now, settleQuiet) {
			return ctx.Err()
		}
		if err := sleepCtx(ctx, min(5*time.Millisecond, end.Sub(now))); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
