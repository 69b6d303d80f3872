package proxy

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// CanonicalDecision starts the one log line the proxy writes per request, as smokescreen's
// CANONICAL-PROXY-DECISION does.
const CanonicalDecision = "CANONICAL-PROXY-DECISION"

// Headers the proxy sets on its own responses. Upstream responses never carry them: the proxy
// removes every X-Browser-Agent-* header an upstream sends.
const (
	// HeaderError names the reason of a response the proxy made itself (a deny, a 407, a 503).
	HeaderError = browse.EgressHeader
	// HeaderTruncated is set on a response whose body the proxy cut at the body cap.
	HeaderTruncated = "X-Browser-Agent-Truncated"
)

// Reason phrases of the proxy's own decisions. Policy decisions use the policy.Reason* phrases.
// They are fixed so that callers and tests can match them exactly.
const (
	ReasonOriginAllowed = "allowed https origin" // a CONNECT to an allowed https origin
	ReasonUpgrade       = "upgrade not allowed"
	ReasonAddress       = "address not allowed"
	ReasonResolve       = "name not resolved"
	ReasonNotProxy      = "not a proxy request"
	ReasonBody          = "request body not allowed"
	ReasonTooMany       = "too many connections"
	ReasonClosed        = "proxy closed"
	ReasonAuth          = "proxy authentication required"
)

// Decision is the canonical record of one request through the proxy: what was asked, what was
// decided and why, and what happened. It never holds a query string, a fragment or a credential.
// The JSON keys are the audit's field names. A denial is recorded at once; an allowed request
// (plain HTTP, or https inside a tunnel) when its response has been passed on; a tunnel (its
// CONNECT) as soon as it is established, so before any request inside it. WithDecidedHook gets
// every record earlier still, as soon as its verdict is taken.
type Decision struct {
	Time time.Time `json:"time"`
	// Entry is the shared decision record: Method, Origin (scheme://host[:port]; "" when the
	// target did not parse), Path (canonical, without query; "" for CONNECT), Verdict, Rule,
	// Reason, and Layer, always policy.LayerProxy. Its N is 0: the coordinator numbers it.
	policy.Entry
	// Status is the HTTP status the client got: the upstream's, or the proxy's own (403, 502, 503,
	// 504; 200 for an established tunnel).
	Status int `json:"status"`
	// Addr is the address dialed, ip:port; "" when nothing was dialed.
	Addr string `json:"addr,omitempty"`
	// BytesOut is what the client sent upstream (always 0: no request body is forwarded); BytesIn
	// is the response body the upstream sent back and the client got.
	BytesOut int64 `json:"bytes_out"`
	BytesIn  int64 `json:"bytes_in"`
	// Truncated means the response body was over the body cap and was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Disagreement means the proxy denied a request that the browser layer had allowed (see
	// NoteBrowserAllowed).
	Disagreement bool `json:"disagreement,omitempty"`
	// Duration is from the request's arrival to the end of its response (for a tunnel, to its
	// establishment); it is
	// marshalled as duration_ms.
	Duration time.Duration `json:"-"`
	// Error is what went wrong after an Allow (dial, upstream, copy), "" otherwise.
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes the record with duration_ms, as the audit stores durations.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision // drops this method
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(d), d.Duration.Milliseconds()})
}

// String is the canonical log line, without the CanonicalDecision prefix.
func (d Decision) String() string {
	return fmt.Sprintf("layer=%s method=%s origin=%s path=%q verdict=%s reason=%q rule=%q status=%d addr=%s bytes_in=%d bytes_out=%d truncated=%t disagreement=%t duration_ms=%d error=%q",
		d.Layer, d.Method, d.Origin, d.Path, d.Verdict, d.Reason, d.Rule, d.Status, d.Addr,
		d.BytesIn, d.BytesOut, d.Truncated, d.Disagreement, d.Duration.Milliseconds(), d.Error)
}

// logRecord is rec as the CanonicalDecision log line shows it: the path only where the policy's
// routes account for every segment (policy.Policy.LogURL), else its length and a keyed hash, so
// that the log never holds a path a page chose; a method a page made up is "OTHER".
func (p *Proxy) logRecord(rec *Decision) Decision {
	out := *rec
	if out.Origin != "" {
		pu, err := policy.ParseURL(p.pol.LogURL(out.Origin+out.Path), "")
		switch {
		case err != nil:
			out.Origin, out.Path = "", ""
		case rec.Path != "":
			out.Origin, out.Path = pu.Origin(), pu.Path()
		default:
			out.Origin = pu.Origin() // a CONNECT: no path to show
		}
	}
	r := p.pol.Redactor(nil, "")
	out.Method, out.Rule = r.Method(out.Method), r.Rule(out.Rule)
	return out
}

// Stats are the proxy's counters since it was made.
type Stats struct {
	Allowed        int64            // requests allowed (plain HTTP and https forwarded, tunnels opened)
	Denied         int64            // requests denied, 407s excluded
	DeniedByReason map[string]int64 // Denied split by reason phrase
	AuthChallenges int64            // 407 answers: a missing or wrong proxy credential
	Disagreements  int64            // denials of a request the browser layer had allowed
	Truncated      int64            // response bodies cut at the body cap
	UpstreamErrors int64            // allowed requests that failed upstream (dial, response, copy)
}

type counters struct {
	allowed, denied, auth, disagreements, truncated, upstreamErrors atomic.Int64
	byReason                                                        sync.Map // reason → *atomic.Int64
}

func (c *counters) deny(reason string) {
	c.denied.Add(1)
	v, ok := c.byReason.Load(reason)
	if !ok {
		v, _ = c.byReason.LoadOrStore(reason, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Allowed:        c.allowed.Load(),
		Denied:         c.denied.Load(),
		DeniedByReason: map[string]int64{},
		AuthChallenges: c.auth.Load(),
		Disagreements:  c.disagreements.Load(),
		Truncated:      c.truncated.Load(),
		UpstreamErrors: c.upstreamErrors.Load(),
	}
	c.byReason.Range(func(k, v any) bool {
		s.DeniedByReason[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return s
}

// Disagreement tracking: the bridge tells the proxy, through NoteBrowserAllowed, which requests its
// route handler allowed. A request the proxy then denies is a layer disagreement when the same
// method, origin and path (never the query), or for a CONNECT the same https origin, was noted
// within NoteWindow.

// NoteWindow is how long a NoteBrowserAllowed note counts.
const NoteWindow = 2 * time.Minute

// maxNotes bounds the notes kept; when it is reached, expired notes are dropped, and if that is not
// enough, all of them (a missed disagreement is better than unbounded memory).
const maxNotes = 4096

type notebook struct {
	mu    sync.Mutex
	notes map[string]time.Time // key → when noted
}

func (n *notebook) add(key string, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notes == nil {
		n.notes = map[string]time.Time{}
	}
	if len(n.notes) >= maxNotes {
		maps.DeleteFunc(n.notes, func(_ string, t time.Time) bool { return now.Sub(t) > NoteWindow })
		if len(n.notes) >= maxNotes {
			clear(n.notes)
		}
	}
	n.notes[key] = now
}

func (n *notebook) seen(key string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.notes[key]
	return ok && now.Sub(t) <= NoteWindow
}

func noteKeyURL(method, originPath string) string { return strings.ToUpper(method) + " " + originPath }
func noteKeyOrigin(origin string) string          { return "CONNECT " + origin }
