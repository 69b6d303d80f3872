package policy

import "strings"

// FilledTemplate reports whether raw is one of the policy's own read routes with every variable
// part filled with recordID: each "{name}" and "*" segment, and each "{var}" query value, equal to
// recordID (letter case aside), literal query values as the route writes them, no other parameter.
// A route with no variable part ("/", "/about") is its own filled template. The coordinator opens
// such a URL for the model without its having been shown one: the model can name the record's
// pages, but not write a string of its choosing into a URL.
func (p *Policy) FilledTemplate(raw, recordID string) bool {
	if recordID == "" {
		// No record (an MCP session before its first search): only a route the policy wrote out
		// whole, with no variable part, can be opened. No segment or value equals a NUL.
		recordID = "\x00"
	}
	u, err := ParseURL(raw, "")
	if err != nil {
		return false
	}
	host, port, scheme := normalizeHost(u.Host()), u.Port(), u.Scheme()
	segs := splitPath(u.Path())
	for i := range p.sites {
		s := &p.sites[i]
		if s.host != host || s.port != port || s.scheme != scheme {
			continue
		}
		for j := range s.routes {
			r := &s.routes[j]
			if !r.match(segs) || !r.queryOK(u.RawQuery()) {
				continue
			}
			if filledWith(r, segs, u.RawQuery(), recordID) {
				return true
			}
		}
	}
	return false
}

func filledWith(r *route, segs []string, q, id string) bool {
	for i, seg := range segs {
		if !r.literalAt(i) && !strings.EqualFold(seg, id) {
			return false
		}
	}
	if q == "" {
		return true
	}
	for pair := range strings.SplitSeq(q, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		if qp := r.query[name]; qp.param && !strings.EqualFold(value, id) {
			return false
		}
	}
	return true
}
