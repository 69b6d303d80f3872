package policy

import (
	"fmt"
	"strings"
)

// route is a compiled read pattern: literal segments, "{name}" for one non-empty segment, and a
// final "*" for the rest of the path (zero or more segments).
type route struct {
	pattern string
	segs    []routeSeg
	rest    bool
}

type routeSeg struct {
	literal string
	param   bool
}

// compileRoute validates a read pattern. It must be an absolute path with no query, fragment,
// percent-encoding, dot segments or empty segments other than the root.
func compileRoute(pattern string) (route, error) {
	r := route{pattern: pattern}
	if !strings.HasPrefix(pattern, "/") {
		return r, fmt.Errorf("route %q must start with /", pattern)
	}
	if strings.ContainsAny(pattern, "?#%\\ \t\r\n") {
		return r, fmt.Errorf("route %q must be a plain path (no ?, #, %%, \\ or white space)", pattern)
	}
	if pattern == "/" {
		return r, nil
	}
	parts := strings.Split(pattern[1:], "/")
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case p == "*" && last:
			r.rest = true
		case p == "*":
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
			name := p[1 : len(p)-1]
			if name == "" || strings.ContainsAny(name, "{}") {
				return r, fmt.Errorf("route %q: malformed parameter %q", pattern, p)
			}
			r.segs = append(r.segs, routeSeg{param: true})
		case strings.ContainsAny(p, "{}"):
			return r, fmt.Errorf("route %q: a parameter must be a whole segment", pattern)
		default:
			r.segs = append(r.segs, routeSeg{literal: p})
		}
	}
	return r, nil
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
func (r route) match(segs []string) bool {
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
