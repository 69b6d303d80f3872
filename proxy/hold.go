package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/browser-agent/browser-agent/policy"
)

// The write hold (issue 43, the guard's write mode; docs/guard-write-mode.md). With WithHold, a
// POST, PUT or PATCH the policy refuses only for being a write (its URL is one the policy reads: origin, route,
// query, no write word) is not refused at once but held: its body is read whole (up to
// MaxHoldBody), the hold function is shown the exact request, and the proxy sends exactly those
// bytes, once, only if it approves. Every other write is refused as without the hold.

// MaxHoldBody is the longest body a held write may carry; a longer one is refused.
const MaxHoldBody = 1 << 20

// Reasons of a held write's refusal.
const (
	ReasonHeldRefused = "refused by a person" // the hold function's default reason
	ReasonHeldBody    = "held write body unreadable or over the cap"
)

// RuleHeldApproved is the rule of a held write a person approved.
const RuleHeldApproved = "held write approved"

// Held is one write the proxy holds: the exact request it sends if approved.
type Held struct {
	Method      string
	URL         string // the canonical URL the policy decided
	ContentType string
	Body        []byte
	// Digest is the hex SHA-256 of Method, "\n", URL, "\n", Body: what an approval is bound to.
	Digest string
}

// HoldFunc decides one held write and may block until a person answers or ctx ends. It returns ""
// to approve (the proxy then sends exactly h's method, URL and body, once), or the reason of the
// refusal.
type HoldFunc func(ctx context.Context, h *Held) (refusal string)

// WithHold makes the proxy hold, rather than refuse, a POST, PUT or PATCH the policy refuses
// only as a write, and send it once f approves it (see Held). DELETE, and every method other
// than these three, stays refused and is never offered: a person may approve what a form sends
// or replaces, not a removal.
func WithHold(f HoldFunc) Option { return func(c *config) { c.hold = f } }

// HoldsMethod says whether a write of this method may be held for a person: POST, PUT, PATCH.
func HoldsMethod(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch
}

// Digest is the digest of a write: the hex SHA-256 of method, URL and body, one line each.
func Digest(method, url string, body []byte) string {
	h := sha256.New()
	io.WriteString(h, method+"\n"+url+"\n")
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// holdWrite decides a write with the hold: ok with the decision and the exact body to send, or
// the refusal's reason and rule.
func (p *Proxy) holdWrite(ctx context.Context, r *http.Request, u *policy.URL) (d policy.Decision, body []byte, reason, rule string) {
	if !HoldsMethod(r.Method) {
		return d, nil, policy.ReasonWriteMethod, "method " + r.Method
	}
	if d = p.pol.DecideURL(http.MethodGet, u); !d.Allowed() {
		return d, nil, d.Reason, d.Rule
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxHoldBody+1))
	if err != nil || len(b) > MaxHoldBody || (r.ContentLength >= 0 && int64(len(b)) != r.ContentLength) {
		return d, nil, ReasonHeldBody, ""
	}
	h := &Held{Method: r.Method, URL: u.String(), ContentType: r.Header.Get("Content-Type"), Body: b}
	h.Digest = Digest(h.Method, h.URL, h.Body)
	if why := p.cfg.hold(ctx, h); why != "" {
		return d, nil, why, "held write " + h.Digest[:12]
	}
	d.Rule = RuleHeldApproved + " " + h.Digest[:12]
	return d, b, "", ""
}
