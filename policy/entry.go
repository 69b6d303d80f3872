package policy

import (
	"regexp"
	"strings"
)

// Layers name what decided a request or a step. Every package records and stores these names.
const (
	LayerPolicy      = "policy"      // the URL policy, before any browser work
	LayerBrowser     = "browser"     // the bridge: a request route, a redirect hop, a credential page
	LayerCoordinator = "coordinator" // the coordinator: tool arguments, no page open, budgets, the answer check
	LayerProxy       = "proxy"       // the egress proxy, at the network layer
)

// Layers lists the Layer* names.
var Layers = []string{LayerPolicy, LayerBrowser, LayerProxy, LayerCoordinator}

// Entry is the one record of a decision, as every layer keeps it and the audit stores it: where
// (origin and path, never a query, a fragment or userinfo), how (method), what was decided
// (verdict, rule, reason), by which layer, and during which step of a run. The bridge's request
// decisions, the proxy's canonical decisions, the coordinator's steps and the audit's rows embed
// it; its JSON keys are the audit's field names.
type Entry struct {
	N       int     `json:"n"` // the step of the run it was decided during; 0 outside a run
	Method  string  `json:"method,omitempty"`
	Origin  string  `json:"origin"` // scheme://host[:port]; "scheme:" for a URL without one
	Path    string  `json:"path"`
	Verdict Verdict `json:"verdict"`
	Rule    string  `json:"rule"`
	Reason  string  `json:"reason"`
	Layer   string  `json:"layer"`
}

// URL is the record's origin and path.
func (r Entry) URL() string { return r.Origin + r.Path }

// Allowed reports whether the verdict is Allow.
func (r Entry) Allowed() bool { return r.Verdict == Allow }

// EntryOf is the record of d, decided by layer on a method request to raw: origin and path come
// from raw as OriginPath keeps them.
func EntryOf(layer, method, raw string, d Decision) Entry {
	o, p := OriginPath(raw)
	return Entry{Method: method, Origin: o, Path: p, Verdict: d.Verdict, Rule: d.Rule, Reason: d.Reason, Layer: layer}
}

// Length bounds, in bytes, of a record's text. Longer values are cut at a UTF-8 boundary.
const (
	MaxTextLen  = 200  // rule and reason
	MaxPathLen  = 1024 // path
	MaxShortLen = 200  // origin, method, layer and other short names
)

// Clean returns r as it may be stored: origin and path re-derived as OriginPath keeps them, rule
// and reason as Text keeps them, and every other field bounded.
func (r Entry) Clean() Entry {
	if r.Origin != "" || r.Path != "" {
		r.Origin, r.Path = OriginPath(r.Origin + r.Path)
	}
	r.Method = Cut(r.Method, MaxShortLen)
	r.Layer = Cut(r.Layer, MaxShortLen)
	r.Rule, r.Reason = Text(r.Rule, MaxTextLen), Text(r.Reason, MaxTextLen)
	return r
}

// ParseVerdict is the Verdict that String printed as s: Allow for "allow", else Deny.
func ParseVerdict(s string) Verdict {
	if s == "allow" {
		return Allow
	}
	return Deny
}

// The one helper for "never store a query string" and "cut to N bytes": every package that keeps,
// logs or shows a URL or a text it did not write itself goes through Cut, Clip, Text and
// OriginPath.

// Cut returns s cut to at most n bytes at a UTF-8 boundary; invalid UTF-8 in s becomes U+FFFD
// first, so the result is always valid UTF-8.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // s[n] continues a character: back to its first byte
		n--
	}
	return s[:max(n, 0)]
}

// Clip is Cut with "…" appended when it cut, for a text quoted in a message.
func Clip(s string, n int) string {
	if v := strings.ToValidUTF8(s, "\uFFFD"); len(v) > n {
		return Cut(v, n) + "…"
	}
	return Cut(s, n)
}

// NoQuery cuts s at its first '?' or '#', so that no query string or fragment is kept.
func NoQuery(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i]
	}
	return s
}

// userinfoInText matches the userinfo of a URL written inside free text.
var userinfoInText = regexp.MustCompile(`//[^/\s?#]*@`)

// Text returns a free text (a rule, a reason, an error) as it may be stored or logged: cut at its
// first '?' or '#' (NoQuery), without the userinfo of any URL in it, trimmed, and Cut to n bytes.
func Text(s string, n int) string {
	s = userinfoInText.ReplaceAllString(NoQuery(s), "//")
	return Cut(strings.TrimSpace(s), n)
}

// OriginPath parses raw as the browser would and keeps its origin and path, bounded (MaxShortLen,
// MaxPathLen): never its query, fragment or userinfo. For schemes other than http(s), ws(s) and
// about, whose "path" can hold the content itself (data:, javascript:), only "scheme:" is kept. An
// unparseable URL gives "", "".
func OriginPath(raw string) (origin, path string) {
	if raw == "" {
		return "", ""
	}
	u, err := ParseURL(raw, "")
	if err != nil {
		return "", ""
	}
	switch s := u.Scheme(); s {
	case "http", "https", "ws", "wss":
		return Cut(u.Origin(), MaxShortLen), Cut(u.Path(), MaxPathLen)
	case "about":
		return "about:", Cut(u.Path(), MaxShortLen)
	default:
		return Cut(s, MaxShortLen) + ":", ""
	}
}

// CleanURL is raw as an error message or a log line may show it: OriginPath's origin and path
// when raw parses, else raw as Text keeps it.
func CleanURL(raw string) string {
	if o, p := OriginPath(raw); o != "" {
		return o + p
	}
	return Text(raw, MaxShortLen)
}
