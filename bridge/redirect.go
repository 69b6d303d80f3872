package bridge

import (
	"fmt"
	"slices"

	"github.com/browser-agent/browser-agent/policy"
)

// Redirects is the hop-by-hop walk of a redirect chain: the bridge's fetcher takes it for every
// document and subresource, and test doubles (internal/testkit/browsertest) take the same one. Each
// Location is decided as a new GET navigation relative to the URL it came from; a missing
// Location, a denied hop, a hop past the policy's cap and a hop back to a URL already visited end
// the walk before another request is sent. The caller makes the requests; Redirects only decides.
// It is not safe for concurrent use.
type Redirects struct {
	pol  *policy.Policy
	max  int
	cur  string
	seen map[string]bool
	hops []Hop
}

// NewRedirects starts a walk at start, a URL the caller has already decided and found allowed.
func NewRedirects(pol *policy.Policy, start string) *Redirects {
	return &Redirects{pol: pol, max: pol.Limits().MaxRedirectHops, cur: start, seen: map[string]bool{start: true}}
}

// URL is the URL to fetch next: the start, then the target of each hop followed.
func (w *Redirects) URL() string { return w.cur }

// Hops lists the hops decided so far, a refused last one included.
func (w *Redirects) Hops() []Hop { return slices.Clip(w.hops) }

// Follow decides loc, the Location header of a response with redirect status to URL(). It
// returns the hop's number and the decision to record for it: the policy's decision, or a deny
// with ReasonHopLimit, ReasonRedirectLoop or ReasonRedirectNoLoc (its URL is the hop's target, or
// URL() when there is none). The error ends the walk: a *DeniedError, ErrHopLimit,
// ErrRedirectLoop, a missing Location, or the policy's own error (the decision is then zero).
// Without an error, URL() is the hop's target.
func (w *Redirects) Follow(status int, loc string) (int, policy.Decision, error) {
	n := len(w.hops) + 1
	if loc == "" {
		return n, policy.Decision{Verdict: policy.Deny, Reason: ReasonRedirectNoLoc, URL: w.cur},
			fmt.Errorf("fetch %s: status %d %s", policy.CleanURL(w.cur), status, ReasonRedirectNoLoc)
	}
	d, err := w.pol.DecideRedirect(w.cur, loc)
	if err != nil {
		return n, policy.Decision{}, fmt.Errorf("redirect hop %d: policy: %w", n, err)
	}
	to := firstNonEmpty(d.URL, loc)
	w.hops = append(w.hops, Hop{From: w.cur, To: to, Status: status, Decision: d})
	rec := d
	rec.URL = to
	switch {
	case !d.Allowed():
		return n, rec, &DeniedError{URL: to, Hop: n, Decision: d}
	case n > w.max:
		rec.Verdict, rec.Reason = policy.Deny, ReasonHopLimit
		return n, rec, fmt.Errorf("%w: hop %d to %s, cap %d", ErrHopLimit, n, policy.CleanURL(to), w.max)
	case w.seen[to]:
		rec.Verdict, rec.Reason = policy.Deny, ReasonRedirectLoop
		return n, rec, fmt.Errorf("%w: hop %d back to %s", ErrRedirectLoop, n, policy.CleanURL(to))
	}
	w.seen[to] = true
	w.cur = to
	return n, rec, nil
}
