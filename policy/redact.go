package policy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// A Redactor turns a decided URL into what may be stored or printed: the audit, logs and stdout
// never hold a string a page or a model chose. It keeps the scheme, the origin when it is one of
// the policy's, and the path only when every part of it that a route leaves open is the task's
// record identifier (literal route segments are the policy's own); any other path becomes its
// length and a keyed hash ("/~redacted-len42-hmac-1f0c…"), so that equal paths still compare equal
// within one key. A host the policy does not name is hashed the same way. Fragments are never kept,
// and a query only when the whole URL is one of the policy's routes filled with the record
// identifier (FilledTemplate: "/search?q=REC-0042"). The one Redactor type serves both layers: the browser's and the proxy's decisions
// go through the coordinator's, and the components' own log lines through LogURL.
type Redactor struct {
	p        *Policy
	key      []byte
	recordID string
}

// NewRedactionKey returns a fresh random key for a Redactor (one per run, say).
func NewRedactionKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("policy: no randomness for a redaction key: " + err.Error())
	}
	return k
}

// Redactor returns a Redactor keyed with key that keeps paths whose variable parts are recordID
// ("" keeps only paths made of route literals).
func (p *Policy) Redactor(key []byte, recordID string) *Redactor {
	return &Redactor{p: p, key: append([]byte(nil), key...), recordID: recordID}
}

// logKey keys the Redactor of LogURL: one per process, never written anywhere.
var logKey = NewRedactionKey()

// LogURL is URL for a component's diagnostic log line, with a per-process key and no record
// identifier.
func (p *Policy) LogURL(raw string) string { return p.Redactor(logKey, "").URL(raw) }

// knownSchemes are kept by name; any other scheme a page wrote is replaced.
var knownSchemes = map[string]bool{
	"http": true, "https": true, "ws": true, "wss": true, "about": true, "data": true, "blob": true,
	"javascript": true, "file": true, "ftp": true, "filesystem": true, "mailto": true, "chrome": true,
	"chrome-extension": true, "chrome-untrusted": true, "devtools": true, "view-source": true, "tel": true,
}

// RedactedScheme stands for a scheme the Redactor does not know by name.
const RedactedScheme = "redacted-scheme"

// URL returns raw as it may be stored: see Redactor. An unparseable URL gives "".
func (r *Redactor) URL(raw string) string {
	if r == nil || raw == "" {
		return ""
	}
	u, err := ParseURL(raw, "")
	if err != nil {
		return ""
	}
	scheme := u.Scheme()
	switch {
	case scheme == "http" || scheme == "https" || scheme == "ws" || scheme == "wss":
	case knownSchemes[scheme]:
		return scheme + ":"
	default:
		return RedactedScheme + ":"
	}
	host := normalizeHost(u.Host())
	var site *site
	hostKnown := false
	for i := range r.p.sites {
		s := &r.p.sites[i]
		if s.host != host {
			continue
		}
		hostKnown = true
		if s.scheme == scheme && s.port == u.Port() {
			site = s
		}
	}
	origin := u.Origin()
	if !hostKnown {
		origin = scheme + "://" + r.tag("h", u.Host()) + ".redacted.invalid"
		if u.port != "" {
			origin += ":" + u.port
		}
	}
	path := u.Path()
	if site != nil && u.RawQuery() != "" && r.p.FilledTemplate(u.String(), r.recordID) {
		// A route filled with the record identifier, its query included ("/search?q=REC-0042"):
		// nothing in it was chosen by a page or the model.
		return origin + path + "?" + u.RawQuery()
	}
	if path == "/" || site != nil && r.safePath(site, splitPath(path)) {
		return origin + path
	}
	return origin + "/~redacted-" + r.tag("len", path)
}

// tag is prefix, the length of s, and the first 8 bytes of HMAC-SHA256(key, s) in hex:
// "len42-hmac-1f0c9a…".
func (r *Redactor) tag(prefix, s string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(s))
	return fmt.Sprintf("%s%d-hmac-%s", prefix, len(s), hex.EncodeToString(m.Sum(nil)[:8]))
}

// safePath reports whether every segment of a path on site is one the policy or the task chose:
// when read routes match the path, the variable segments of one of them must be the record
// identifier; when
// none does, every segment must be the record identifier, a literal of one of the site's routes
// or a write word, and there may be at most one segment more than the site's longest route (so
// that a page cannot spell a message out of the policy's own words at length).
func (r *Redactor) safePath(s *site, segs []string) bool {
	isID := func(seg string) bool { return r.recordID != "" && strings.EqualFold(seg, r.recordID) }
	longest, matched := 0, false
	for i := range s.routes {
		rt := &s.routes[i]
		longest = max(longest, len(rt.segs))
		if !rt.match(segs) {
			continue
		}
		matched = true
		filled := true
		for j, seg := range segs {
			if !rt.literalAt(j) && !isID(seg) {
				filled = false
				break
			}
		}
		if filled {
			return true // some matching route accounts for every segment
		}
	}
	if matched || len(segs) > longest+1 {
		return false
	}
	for _, seg := range segs {
		if isID(seg) || r.p.writeWords[seg] || s.hasLiteral(seg) {
			continue
		}
		return false
	}
	return true
}

// hasLiteral reports whether seg is a literal segment of one of the site's routes.
func (s *site) hasLiteral(seg string) bool {
	for i := range s.routes {
		for _, rs := range s.routes[i].segs {
			if !rs.param && rs.literal == seg && seg != "" {
				return true
			}
		}
	}
	return false
}

// standardMethods are kept by name in a rule; any other method a page chose is replaced.
var standardMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true,
	"OPTIONS": true, "CONNECT": true, "TRACE": true,
}

// Method returns m when it is a standard HTTP method, else "OTHER".
func (r *Redactor) Method(m string) string {
	if standardMethods[strings.ToUpper(m)] {
		return strings.ToUpper(m)
	}
	if m == "" {
		return ""
	}
	return "OTHER"
}

// Rule returns a decision's rule as it may be stored. The policy's rules name its own routes,
// write words and fixed phrases; the two that quote the request, "method M" and "scheme S", keep
// M and S only when they are standard.
func (r *Redactor) Rule(rule string) string {
	if m, ok := strings.CutPrefix(rule, "method "); ok {
		return "method " + r.Method(m)
	}
	if s, ok := strings.CutPrefix(rule, "scheme "); ok {
		if knownSchemes[s] {
			return rule
		}
		return "scheme " + RedactedScheme
	}
	return rule
}
