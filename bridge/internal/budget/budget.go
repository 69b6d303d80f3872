// Package budget is a bridge session's request budget, from the policy's limits:
//
//   - max_run_bytes: the response body bytes the session reads over its life (every hop, every
//     document and subresource). A fetch is admitted only while the count is under the limit;
//     the body that crosses it is finished (it is at most the body cap), and the budget is then
//     spent.
//   - max_page_requests: the subresource and frame requests fetched for one opened page (NewPage
//     resets the count). The request past it is denied, and the budget is spent.
//   - max_concurrent_requests: fetches in flight at once, each held from its first byte sent to
//     the end of its fulfil, so that no more than this many response bodies are in memory. A
//     request beyond it waits for a slot (Acquire), as Chromium's own connection limit makes
//     requests wait; it is never spent.
//
// Handing a body to the browser costs several times its size in the bridge's process (Playwright
// sends it base64 in a JSON message), so large bodies also pass a gate weighted by their size
// (Gate): at most one body cap's worth of them is being handed over at once; bodies under
// SmallBody pass freely.
//
// A spent budget is final: every later Admit, PageRequest and Acquire returns it. The egress proxy
// keeps its own count of the run's bytes; a fetch it refuses for that reason spends the same
// budget here (ProxyRefused).
package budget

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/internal/countio"
	"github.com/browser-agent/browser-agent/policy"
	"golang.org/x/sync/semaphore"
)

// SmallBody is the size under which a body is handed to the browser without the gate.
const SmallBody = 256 << 10

// Budget is one session's budget. Its methods are safe for concurrent use.
type Budget struct {
	maxBytes, maxRequests int64
	slots                 chan struct{}
	bodies                *semaphore.Weighted // bytes of large bodies being handed over
	bodyCap               int64

	bytes    atomic.Int64 // response body bytes read this session
	requests atomic.Int64 // subresource requests fetched for the current page

	mu        sync.Mutex
	err       *browse.BudgetError
	spent     chan struct{} // closed when err is set
	spentOnce sync.Once
}

// New returns the budget of l (the policy's defaults where a limit is not set); bodyCap is the
// largest body one fetch reads.
func New(l policy.Limits, bodyCap int64) *Budget {
	b := &Budget{
		maxBytes:    l.MaxRunBytes,
		maxRequests: int64(l.MaxPageRequests),
		spent:       make(chan struct{}),
		bodyCap:     max(bodyCap, SmallBody),
	}
	b.bodies = semaphore.NewWeighted(b.bodyCap)
	if b.maxBytes <= 0 {
		b.maxBytes = policy.DefaultMaxRunBytes
	}
	if b.maxRequests <= 0 {
		b.maxRequests = policy.DefaultMaxPageRequests
	}
	n := l.MaxConcurrentRequests
	if n <= 0 {
		n = policy.DefaultMaxConcurrentRequests
	}
	b.slots = make(chan struct{}, n)
	return b
}

// Spent is the spent budget, nil while none is.
func (b *Budget) Spent() *browse.BudgetError {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// spend records e as the spent budget unless one already is, and returns the one recorded.
func (b *Budget) spend(e *browse.BudgetError) *browse.BudgetError {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = e
		b.spentOnce.Do(func() { close(b.spent) })
	}
	return b.err
}

// Admit is asked before every request the session sends: nil while the run may fetch.
func (b *Budget) Admit() *browse.BudgetError {
	if e := b.Spent(); e != nil {
		return e
	}
	if b.bytes.Load() >= b.maxBytes {
		return b.spend(&browse.BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: b.maxBytes})
	}
	return nil
}

// NewPage starts the request count of a newly opened page.
func (b *Budget) NewPage() { b.requests.Store(0) }

// PageRequest counts one subresource request of the current page.
func (b *Budget) PageRequest() *browse.BudgetError {
	if b.requests.Add(1) > b.maxRequests {
		return b.spend(&browse.BudgetError{Reason: policy.ReasonBudgetPageRequests, Limit: b.maxRequests})
	}
	return b.Admit()
}

// Acquire waits for a fetch slot. It fails when ctx ends first, or with the budget when one is
// spent meanwhile.
func (b *Budget) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case b.slots <- struct{}{}:
	case <-b.spent:
		return nil, b.Spent()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release = func() { <-b.slots }
	if e := b.Admit(); e != nil {
		release()
		return nil, e
	}
	return release, nil
}

// Gate waits until a body of n bytes may be held in memory to be handed to the browser, and
// returns the release of its share (nothing to wait for under SmallBody). It fails when ctx ends
// first.
func (b *Budget) Gate(ctx context.Context, n int64) (release func(), err error) {
	if n < SmallBody {
		return func() {}, nil
	}
	w := min(n, b.bodyCap)
	if err := b.bodies.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { b.bodies.Release(w) }, nil
}

// Count passes r through, adding what is read to the run's bytes; the read that reaches the
// limit spends the budget.
func (b *Budget) Count(r io.Reader) io.Reader {
	return countio.Reader(r, func(n int64) {
		if b.bytes.Add(n) >= b.maxBytes {
			b.spend(&browse.BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: b.maxBytes})
		}
	})
}

// ProxyRefused spends the budget because the run's egress proxy refused a fetch, its own count of
// the run's bytes being spent, and returns the budget spent.
func (b *Budget) ProxyRefused() *browse.BudgetError {
	return b.spend(&browse.BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: b.maxBytes, Proxy: true})
}
