package bridge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/browser-agent/browser-agent/policy"
	"golang.org/x/sync/semaphore"
)

// The session's budgets, from the policy's limits:
//
//   - max_run_bytes: the response body bytes the session reads over its life (every hop, every
//     document and subresource). A fetch is admitted only while the count is under the limit;
//     the body that crosses it is finished (it is at most the body cap), and the budget is then
//     spent.
//   - max_page_requests: the subresource and frame requests fetched for one opened page (Open
//     resets the count). The request past it is denied, and the budget is spent.
//   - max_concurrent_requests: fetches in flight at once, each held from its first byte sent to
//     the end of its fulfil, so that no more than this many response bodies are in memory. A
//     request beyond it waits for a slot, as Chromium's own connection limit makes requests wait;
//     it is never spent.
//
// Handing a body to the browser costs several times its size in this process (Playwright sends it
// base64 in a JSON message), so large bodies also pass a gate weighted by their size: at most one
// body cap's worth of them is being handed over at once; bodies under smallBody pass freely.
//
// A spent budget is final for the session: every later request is denied with its reason, and
// Open, Read, Links, Fields and Screenshot return a *BudgetError. The egress proxy keeps its own
// count of the run's bytes; a fetch it refuses for that reason (a 403 whose X-Browser-Agent-Error
// is policy.ReasonBudgetRunBytes) spends the same budget here.

// ReasonSlotTimeout is the reason of a request that waited for a fetch slot
// (max_concurrent_requests) until its navigation timeout passed.
const ReasonSlotTimeout = "no fetch slot before the timeout"

// smallBody is the size under which a body is handed to the browser without the fulfil gate.
const smallBody = 256 << 10

type budget struct {
	maxBytes, maxRequests int64
	slots                 chan struct{}
	bodies                *semaphore.Weighted // bytes of large bodies being fulfilled
	bodyCap               int64

	bytes    atomic.Int64 // response body bytes read this session
	requests atomic.Int64 // subresource requests fetched for the current page

	mu        sync.Mutex
	err       *BudgetError
	spent     chan struct{} // closed when err is set
	spentOnce sync.Once
}

func newBudget(l policy.Limits, bodyCap int64) *budget {
	b := &budget{
		maxBytes:    l.MaxRunBytes,
		maxRequests: int64(l.MaxPageRequests),
		spent:       make(chan struct{}),
		bodyCap:     max(bodyCap, smallBody),
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

// spentErr is the spent budget, nil while none is.
func (b *budget) spentErr() *BudgetError {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// spend records e as the spent budget unless one already is, and returns the one recorded.
func (b *budget) spend(e *BudgetError) *BudgetError {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = e
		b.spentOnce.Do(func() { close(b.spent) })
	}
	return b.err
}

// admit is asked before every request the session sends: nil while the run may fetch.
func (b *budget) admit() *BudgetError {
	if e := b.spentErr(); e != nil {
		return e
	}
	if b.bytes.Load() >= b.maxBytes {
		return b.spend(&BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: b.maxBytes})
	}
	return nil
}

// newPage starts the request count of a newly opened page.
func (b *budget) newPage() { b.requests.Store(0) }

// pageRequest counts one subresource request of the current page.
func (b *budget) pageRequest() *BudgetError {
	if b.requests.Add(1) > b.maxRequests {
		return b.spend(&BudgetError{Reason: policy.ReasonBudgetPageRequests, Limit: b.maxRequests})
	}
	return b.admit()
}

// acquire waits for a fetch slot. It fails when ctx ends first, or with the budget when one is
// spent meanwhile.
func (b *budget) acquire(ctx context.Context) (release func(), err error) {
	select {
	case b.slots <- struct{}{}:
	case <-b.spent:
		return nil, b.spentErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release = func() { <-b.slots }
	if e := b.admit(); e != nil {
		release()
		return nil, e
	}
	return release, nil
}

// readBody reads a final response's body. A body declared larger than smallBody takes the fulfil
// gate before it is read, so that large bodies wait unread rather than in memory; release, when
// not nil, hands the gate on to the fulfil (gateFor) and must be called.
func (ro *router) readBody(ctx context.Context, resp *http.Response, limit int64) (body []byte, truncated bool, release func(), err error) {
	if n := resp.ContentLength; n >= smallBody {
		w := min(n, ro.budget.bodyCap)
		if err := ro.budget.bodies.Acquire(ctx, w); err != nil {
			return nil, false, nil, err
		}
		release = func() { ro.budget.bodies.Release(w) }
	}
	body, truncated, err = readCapped(resp.Body, limit, resp.ContentLength)
	if err != nil && release != nil {
		release()
		release = nil
	}
	return body, truncated, release, err
}

// gateFor returns the release of the fulfil gate for f: the one f took when its body was read, or
// a new one. It is nil when the gate could not be taken.
func (ro *router) gateFor(f *fetched) func() {
	if f.release != nil {
		r := f.release
		f.release = nil
		return r
	}
	return ro.fulfilGate(len(f.body))
}

// dropGate lets go of the gate f holds, for a body that is not handed over at once.
func (f *fetched) dropGate() {
	if f != nil && f.release != nil {
		f.release()
		f.release = nil
	}
}

// fulfilGate waits until a body of n bytes may be handed to the browser. release is nil when the
// session closed or the navigation timeout passed first.
func (ro *router) fulfilGate(n int) (release func()) {
	if n < smallBody {
		return func() {}
	}
	w := min(int64(n), ro.budget.bodyCap)
	ctx, cancel := ro.requestContext()
	defer cancel()
	if err := ro.budget.bodies.Acquire(ctx, w); err != nil {
		return nil
	}
	return func() { ro.budget.bodies.Release(w) }
}

// count passes r through, adding what is read to the run's bytes.
func (b *budget) count(r io.Reader) io.Reader { return &countingReader{r: r, b: b} }

type countingReader struct {
	r io.Reader
	b *budget
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.b.bytes.Add(int64(n)) >= c.b.maxBytes {
		c.b.spend(&BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: c.b.maxBytes})
	}
	return n, err
}

// proxyRefused reports a refusal of the run's egress proxy because its own count of the run's
// bytes is spent (as a response, or as the fetcher's *EgressError), and spends the budget here too.
func (b *budget) proxyRefused(resp *http.Response, err error, viaProxy bool) *BudgetError {
	refused := false
	if ee, ok := errors.AsType[*EgressError](err); ok {
		refused = ee.Status == http.StatusForbidden && ee.Reason == policy.ReasonBudgetRunBytes
	} else if resp != nil {
		refused = resp.StatusCode == http.StatusForbidden && resp.Header.Get(headerProxyError) == policy.ReasonBudgetRunBytes
	}
	if !viaProxy || !refused {
		return nil
	}
	return b.spend(&BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: b.maxBytes, Proxy: true})
}

// budgetResponse looks at what a fetch returned before the fetcher reads it: a refusal of the
// egress proxy for the run's bytes spends the budget (rd is recorded as denied); any other
// response has its body counted.
func (ro *router) budgetResponse(resp *http.Response, err error, rd RequestDecision) *BudgetError {
	if e := ro.budget.proxyRefused(resp, err, ro.cfg.proxy != nil); e != nil {
		if resp != nil {
			resp.Body.Close()
		}
		ro.budgetDenied(rd, e)
		return e
	}
	if resp != nil {
		resp.Body = countedBody{Reader: ro.budget.count(resp.Body), Closer: resp.Body}
	}
	return nil
}

type countedBody struct {
	io.Reader
	io.Closer
}

// budgetDenied records a request denied because of a budget.
func (ro *router) budgetDenied(rd RequestDecision, e *BudgetError) {
	rd.Verdict, rd.Rule, rd.Reason = policy.Deny, e.Rule(), e.Reason
	ro.record(rd)
}
