package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind is what a variable part of a read route holds, and so how write detection reads it.
type Kind int

const (
	// KindID is an identifier, a token ("SYN-0042", "3", a user name): a write word or stem
	// anywhere in it is a command, as in "/records/deleteall".
	KindID Kind = iota
	// KindText is free text (a title, a slug, a file path, a search query): content, never read
	// as a command, except a bare verb in an action position (after a record, or first in a
	// "*:text" rest) and an action parameter smuggled into it ("x&action=delete").
	KindText
	// KindPath is the "*" rest of a path: a tree of names, each read as an identifier is.
	KindPath
	// KindLiteral is a segment the policy wrote itself.
	KindLiteral
)

func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindPath:
		return "path"
	case KindLiteral:
		return "literal"
	default:
		return "id"
	}
}

// textNames are variable names that hold free text unless the policy says otherwise; a name that
// ends in one of the long ones ("post_title", "wikiSlug") does too. Every other name is an
// identifier: the strict reading is the default, and check-url says how to write the other.
var textNames = map[string]bool{
	"title": true, "slug": true, "q": true, "query": true, "search": true, "term": true, "terms": true,
	"keyword": true, "keywords": true, "kw": true, "topic": true, "subject": true, "article": true,
	"headline": true, "heading": true, "phrase": true, "text": true, "question": true, "wd": true,
	"tag": true, "category": true, "label": true,
}

// actionNames are query parameter names that carry a command in real software ("?action=trash",
// "?do=delete", "?op=purge", "?mode=logout", "?_task=logout", "?_method=delete"): their value is
// always read as an identifier.
var actionNames = map[string]bool{
	"action": true, "act": true, "do": true, "op": true, "operation": true, "cmd": true, "command": true,
	"mode": true, "task": true, "method": true, "func": true, "function": true, "verb": true,
	"exec": true, "execute": true, "run": true, "submit": true,
}

// normName lower-cases a variable or parameter name and drops its _ - . characters.
func normName(n string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.':
			return -1
		}
		return r
	}, strings.ToLower(n))
}

// defaultKind is the kind a variable gets from its name alone.
func defaultKind(name string) Kind {
	n := normName(name)
	if textNames[n] {
		return KindText
	}
	for _, suf := range []string{"title", "slug", "query"} {
		if strings.HasSuffix(n, suf) {
			return KindText
		}
	}
	return KindID
}

// actionName reports whether a query parameter's name makes its value a command.
func actionName(name string) bool { return actionNames[normName(name)] }

// parseVariable reads what stands between the braces of a route variable: "name" (the kind
// follows the name, see defaultKind) or "name:kind" with kind id or text.
func parseVariable(v string) (name string, kind Kind, given bool, err error) {
	name, k, has := strings.Cut(v, ":")
	if name == "" || strings.ContainsAny(name, "{}:*") {
		return "", 0, false, fmt.Errorf("malformed name %q", name)
	}
	if !has {
		return name, defaultKind(name), false, nil
	}
	switch k {
	case "id":
		return name, KindID, true, nil
	case "text":
		return name, KindText, true, nil
	}
	return "", 0, false, fmt.Errorf("kind %q must be id (an identifier) or text (titles, slugs, file paths, search terms)", k)
}

// Variable describes one variable part of a read route, for "policy validate".
type Variable struct {
	Route string // the route as written
	Name  string // "{title}", "*", "?q={query}"
	Kind  Kind
	// Why says where the kind comes from: "written", "default for the name", "action parameter",
	// "search query".
	Why string
}

// Variables lists the variable parts of every read route of the site with the given origin.
func (p *Policy) Variables(origin string) []Variable {
	var out []Variable
	for i := range p.sites {
		s := &p.sites[i]
		if s.origin != origin {
			continue
		}
		for j := range s.routes {
			r := &s.routes[j]
			for _, rs := range r.segs {
				if rs.param {
					out = append(out, Variable{Route: r.pattern, Name: "{" + rs.name + "}", Kind: rs.kind, Why: why(rs.given, "")})
				}
			}
			if r.rest {
				w := "default for *"
				if r.restKind == KindText {
					w = "written"
				}
				out = append(out, Variable{Route: r.pattern, Name: "*", Kind: r.restKind, Why: w})
			}
			for _, name := range sortedKeys(r.query) {
				qp := r.query[name]
				if !qp.param {
					continue
				}
				w := why(qp.given, name)
				if r.search {
					w = "search query"
				}
				out = append(out, Variable{Route: r.pattern, Name: "?" + name + "={" + qp.name + "}", Kind: qp.kind, Why: w})
			}
		}
	}
	return out
}

func sortedKeys(m map[string]queryParam) []string { return slices.Sorted(maps.Keys(m)) }

func why(given bool, param string) string {
	switch {
	case given:
		return "written"
	case param != "" && actionName(param):
		return "action parameter"
	default:
		return "default for the name"
	}
}
