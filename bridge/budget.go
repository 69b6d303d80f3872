package bridge

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/browser-agent/browser-agent/bridge/internal/budget"
	"github.com/browser-agent/browser-agent/bridge/internal/fetch"
	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// The session's budgets (max_run_bytes, max_page_requests, max_concurrent_requests) are kept by
// package budget; here the router asks it. A spent budget is final for the session: every later
// request is denied with its reason, and Open, Read, Links, Fields and Screenshot return a
// *BudgetError. The egress proxy keeps its own count of the run's bytes; a fetch it refuses for
// that reason (a 403 whose X-Browser-Agent-Error is policy.ReasonBudgetRunBytes) spends the same
// budget here.

// ReasonSlotTimeout is the reason of a request that waited for a fetch slot
// (max_concurrent_requests) until its navigation timeout passed.
const ReasonSlotTimeout = "no fetch slot before the timeout"

// readBody reads a final response's body. A body declared larger than budget.SmallBody takes the
// fulfil gate before it is read, so that large bodies wait unread rather than in memory; release,
// when not nil, hands the gate on to the fulfil (gateFor) and must be called.
func (ro *router) readBody(ctx context.Context, resp *http.Response, limit int64) (body []byte, truncated bool, release func(), err error) {
	if n := resp.ContentLength; n >= budget.SmallBody {
		if release, err = ro.budget.Gate(ctx, n); err != nil {
			return nil, false, nil, err
		}
	}
	body, truncated, err = fetch.ReadCapped(resp.Body, limit, resp.ContentLength)
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
	if n < budget.SmallBody {
		return func() {} // nothing to wait for: no request context for it
	}
	ctx, cancel := ro.requestContext()
	defer cancel()
	release, err := ro.budget.Gate(ctx, int64(n))
	if err != nil {
		return nil
	}
	return release
}

// proxyRefusedBudget reports whether a fetch's answer (a response, or the fetcher's *EgressError)
// is the run's egress proxy refusing it because its own count of the run's bytes is spent.
func proxyRefusedBudget(resp *http.Response, err error) bool {
	if ee, ok := errors.AsType[*EgressError](err); ok {
		return ee.Status == http.StatusForbidden && ee.Reason == policy.ReasonBudgetRunBytes
	}
	return resp != nil && resp.StatusCode == http.StatusForbidden && resp.Header.Get(browse.EgressHeader) == policy.ReasonBudgetRunBytes
}

// budgetResponse looks at what a fetch returned before the fetcher reads it: a refusal of the
// egress proxy for the run's bytes spends the budget (rd is recorded as denied); any other
// response has its body counted.
func (ro *router) budgetResponse(resp *http.Response, err error, rd RequestDecision) *BudgetError {
	if ro.cfg.proxy != nil && proxyRefusedBudget(resp, err) {
		e := ro.budget.ProxyRefused()
		if resp != nil {
			resp.Body.Close()
		}
		ro.budgetDenied(rd, e)
		return e
	}
	if resp != nil {
		resp.Body = countedBody{Reader: ro.budget.Count(resp.Body), Closer: resp.Body}
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
