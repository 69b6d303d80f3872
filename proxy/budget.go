package proxy

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/browser-agent/browser-agent/internal/countio"
	"github.com/browser-agent/browser-agent/policy"
)

// The run's byte budget at the network layer. The proxy counts every response body byte it passes
// back to the run, over plain HTTP and inside intercepted tunnels alike. Once the count reaches
// the budget (WithRunBytes, by default the policy's limits.max_run_bytes), every later request,
// CONNECT and requests inside open tunnels included, is denied with 403 and reason
// policy.ReasonBudgetRunBytes. A response already being passed back is finished (the body cap
// bounds it), so the count may pass the budget by at most one body cap per request in flight.

// WithRunBytes sets the run's byte budget (default: the policy's limits.max_run_bytes).
func WithRunBytes(n int64) Option { return func(c *config) { c.runBytes = n } }

type budget struct {
	max  int64
	used atomic.Int64
}

func newBudget(cfg config, pol *policy.Policy) (*budget, error) {
	n := cfg.runBytes
	if n == 0 {
		n = pol.Limits().MaxRunBytes
	}
	if n <= 0 {
		return nil, fmt.Errorf("proxy: run bytes %d must be positive", n)
	}
	return &budget{max: n}, nil
}

func (b *budget) spent() bool { return b.used.Load() >= b.max }

func (b *budget) rule() string { return fmt.Sprintf("limits.max_run_bytes %d", b.max) }

// RunBytes is how many bytes the proxy has passed back to the run so far.
func (p *Proxy) RunBytes() int64 { return p.budget.used.Load() }

// refuseOverBudget denies r, and reports true, when the run's byte budget is spent.
func (p *Proxy) refuseOverBudget(w http.ResponseWriter, r *http.Request, rec *Decision) bool {
	if !p.budget.spent() {
		return false
	}
	if r.Method == http.MethodConnect {
		if u, _, _ := p.decideConnect(r.Host); u != nil {
			rec.Origin = u.Origin()
		}
	} else if u, err := policy.ParseURL(r.RequestURI, rec.Origin); err == nil {
		// An absolute URL, or a path inside a tunnel to rec.Origin.
		rec.Origin, rec.Path = u.Origin(), u.Path()
	}
	p.refuse(w, rec, http.StatusForbidden, policy.ReasonBudgetRunBytes, p.budget.rule(), "")
	return true
}

// count passes r through, counting what is read.
func (b *budget) count(r io.Reader) io.Reader {
	return countio.Reader(r, func(n int64) { b.used.Add(n) })
}
