package policy

import (
	"fmt"
	"regexp"
	"strings"
)

// route is a compiled read pattern: literal segments, "{name}" for one non-empty segment, and a
// final "*" for the rest of the path (zero or more segments), then optionally a query template
// naming the parameters the route accepts ("?q={query}&page={n}&view=full").
type route struct {
	pattern string
	segs    []routeSeg
	rest    bool
	// restKind is what the "*" rest holds: KindPath (written "*") or KindText ("*:text").
	restKind Kind
	// search marks the site's search template: its {query} is free text by definition.
	search bool
	// query maps each accepted parameter name to its value: a "{name}" (any value) or a literal.
	// A route without a query template accepts no parameters.
	query map[string]queryParam
	// bare: the template is one bare "{name}" ("/static/*?{version}"): the query is one token
	// with no "=" (a stylesheet's cache-busting "?2022.1"), letters, digits, _ . ~ or -.
	bare bool
}

type routeSeg struct {
	literal string
	param   bool
	name    string // the variable's name, for a param
	kind    Kind   // what a param holds
	given   bool   // the kind was written ({name:kind}), not the default for the name
}

type queryParam struct {
	literal string
	param   bool
	name    string
	kind    Kind
	given   bool
}

// reQueryToken is what a parameter name or a literal value of a query template may be.
var reQueryToken = regexp.MustCompile(`^[A-Za-z0-9_.~-]+$`)

// compileRoute validates a read pattern: an absolute path with no fragment, percent-encoding,
// ';', dot segments or empty segments other than the root, then optionally "?" and a query
// template of name={var} or name=literal pairs joined by "&", or one bare {var} (a token alone).
func compileRoute(pattern string) (route, error) {
	r := route{pattern: pattern}
	if !strings.HasPrefix(pattern, "/") {
		return r, fmt.Errorf("route %q must start with /", pattern)
	}
	path, query, hasQuery := strings.Cut(pattern, "?")
	if strings.ContainsAny(path, "?#%;\\ \t\r\n") {
		return r, fmt.Errorf("route %q: the path must be plain (no #, %%, ;, \\ or white space)", pattern)
	}
	if hasQuery && strings.HasPrefix(query, "{") && strings.HasSuffix(query, "}") && !strings.ContainsAny(query, "=&") {
		// One bare token: a cache-busting version (the whole query, no name=value).
		v, _, _, err := parseVariable(query[1 : len(query)-1])
		if err != nil || !reQueryToken.MatchString(v) {
			return r, fmt.Errorf("route %q: malformed query variable %q", pattern, query)
		}
		r.bare, hasQuery = true, false
	}
	if hasQuery {
		q, err := compileQuery(pattern, query)
		if err != nil {
			return r, err
		}
		r.query = q
	}
	if path == "/" {
		return r, nil
	}
	parts := strings.Split(path[1:], "/")
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case (p == "*" || p == "*:text") && last:
			r.rest, r.restKind = true, KindPath
			if p == "*:text" {
				r.restKind = KindText
			}
		case p == "*" || p == "*:text":
			return r, fmt.Errorf("route %q: * is only allowed as the last segment", pattern)
		case strings.Contains(p, "*"):
			return r, fmt.Errorf("route %q: * must be a whole segment", pattern)
		case p == "" && last:
			// a trailing slash: "/sources/" matches exactly that path
			r.segs = append(r.segs, routeSeg{literal: ""})
		case p == "":
			return r, fmt.Errorf("route %q has an empty segment", pattern)
		case p == "." || p == "..":
			return r, fmt.Errorf("route %q has a dot segment", pattern)
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			name, kind, given, err := parseVariable(p[1 : len(p)-1])
			if err != nil {
				return r, fmt.Errorf("route %q: parameter %q: %v", pattern, p, err)
			}
			r.segs = append(r.segs, routeSeg{param: true, name: name, kind: kind, given: given})
		case strings.ContainsAny(p, "{}"):
			return r, fmt.Errorf("route %q: a parameter must be a whole segment", pattern)
		default:
			r.segs = append(r.segs, routeSeg{literal: p})
		}
	}
	return r, nil
}

// compileQuery validates a route's query template.
func compileQuery(pattern, query string) (map[string]queryParam, error) {
	if query == "" {
		return nil, fmt.Errorf("route %q: empty query template after ?; name the parameters, e.g. ?q={query}&page={n}", pattern)
	}
	out := map[string]queryParam{}
	for pair := range strings.SplitSeq(query, "&") {
		name, value, ok := strings.Cut(pair, "=")
		switch {
		case !ok || value == "":
			return nil, fmt.Errorf("route %q: query parameter %q must be name={var} or name=value", pattern, pair)
		case !reQueryToken.MatchString(name):
			return nil, fmt.Errorf("route %q: query parameter name %q must be letters, digits, _ . ~ or -", pattern, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("route %q: query parameter %q is named twice", pattern, name)
		}
		switch {
		case strings.HasPrefix(value, "{") && strings.HasSuffix(value, "}"):
			v, kind, given, err := parseVariable(value[1 : len(value)-1])
			if err != nil || !reQueryToken.MatchString(v) {
				return nil, fmt.Errorf("route %q: malformed query variable %q", pattern, value)
			}
			if actionName(name) {
				if given && kind == KindText {
					return nil, fmt.Errorf("route %q: parameter %q names an action; its value is always read as a command and cannot be text", pattern, name)
				}
				kind, given = KindID, false
			} else if !given {
				// The value's kind follows the parameter's name ("q", "search", "title") unless
				// the variable's own name says more ("?s={query}").
				if nk := defaultKind(name); nk == KindText {
					kind = KindText
				}
			}
			out[name] = queryParam{param: true, name: v, kind: kind, given: given}
		case reQueryToken.MatchString(value):
			out[name] = queryParam{literal: value}
		default:
			return nil, fmt.Errorf("route %q: query value %q must be {var} or letters, digits, _ . ~ or -", pattern, value)
		}
	}
	return out, nil
}

// splitPath splits a canonical path into segments: "/" → [], "/a/b" → [a b], "/a/" → [a ""].
func splitPath(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// match reports whether the path segments match the route. Literal segments compare exactly with
// the canonical (still percent-encoded) segment, so "%72ecords" does not match "records".
func (r *route) match(segs []string) bool {
	if r.rest {
		// "/sources/*" needs at least one segment after "sources" ("/sources/" has an empty one).
		if len(segs) <= len(r.segs) {
			return false
		}
	} else if len(segs) != len(r.segs) {
		return false
	}
	for i, rs := range r.segs {
		s := segs[i]
		if rs.param {
			if s == "" {
				return false
			}
			continue
		}
		if s != rs.literal {
			return false
		}
	}
	return true
}

// queryOK reports whether every parameter of the raw query q is one the route names, given at
// most once, with the route's value when that is a literal. Empty pairs ("a=1&&b=2") are skipped.
func (r *route) queryOK(q string) bool {
	if q == "" {
		return true
	}
	if r.bare {
		// One token, nothing else: no name=value, no second token, no escape.
		return reQueryToken.MatchString(q)
	}
	if len(r.query) == 0 {
		// No template: no parameters. A bare "?" or only "&"s carry nothing.
		return strings.Trim(q, "&") == ""
	}
	var seenBuf [8]string
	seen := seenBuf[:0]
	for pair := range strings.SplitSeq(q, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		qp, ok := r.query[name]
		if !ok {
			return false
		}
		for _, s := range seen {
			if s == name {
				return false // a repeated parameter: servers differ in which one they read
			}
		}
		seen = append(seen, name)
		if !qp.param && value != qp.literal {
			return false
		}
	}
	return true
}

// kindAt is what path segment i holds under the route: KindLiteral for a segment the policy wrote,
// a variable's kind, or the rest's kind.
func (r *route) kindAt(i int) Kind {
	switch {
	case r == nil:
		return KindID
	case i < len(r.segs) && !r.segs[i].param:
		return KindLiteral
	case i < len(r.segs):
		return r.segs[i].kind
	default:
		return r.restKind
	}
}

// literalAt reports whether path segment i is matched by a literal segment of the route.
func (r *route) literalAt(i int) bool {
	return r != nil && i < len(r.segs) && !r.segs[i].param
}

// declares reports whether the route's query template names the parameter name.
func (r *route) declares(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.query[name]
	return ok
}

// literalValue reports whether the route's query template gives parameter name the literal value.
func (r *route) literalValue(name, value string) bool {
	if r == nil {
		return false
	}
	qp, ok := r.query[name]
	return ok && !qp.param && qp.literal == value
}

// unsafeSegment says why a path segment cannot be a route segment, or "" when it can: after any
// number of percent-decodings up to maxDecodeRounds it holds no '/' or '\' (a server that decodes
// them sees more segments), no ';' (Java servers and some proxies drop ";…" parameters, so "..;"
// reads as ".."), no control character, and is not "." or "..".
func unsafeSegment(seg string) string {
	return decodings(seg, "is percent-encoded beyond 4 decodings", func(s string) string {
		switch {
		case strings.ContainsAny(s, "/\\"):
			return "holds an encoded / or \\"
		case strings.IndexByte(s, ';') >= 0:
			return "holds a ; parameter"
		case s == "." || s == "..":
			return "decodes to a dot segment"
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return "holds a control character"
			}
		}
		return ""
	})
}
