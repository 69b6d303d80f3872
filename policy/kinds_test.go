package policy

import (
	"strings"
	"testing"
)

// TestVariableKinds: a variable's kind comes from its name unless written; the rest is a path
// unless written *:text; an action parameter is never text; a wrong kind is an error naming it.
func TestVariableKinds(t *testing.T) {
	p := mustParse(t, `version: 1
sites:
  - origin: https://example.org
    read:
      - /wiki/{title}
      - /u/{user}
      - /n/{name:text}
      - /p/{slug:id}
      - /docs/*
      - /src/*:text
      - /w?title={page}&action={do}&post_title={x}
      - /find
    search: /find?s={query}
`)
	got := map[string]string{}
	for _, v := range p.Variables("https://example.org") {
		got[v.Route+" "+v.Name] = v.Kind.String() + " " + v.Why
	}
	want := map[string]string{
		"/wiki/{title} {title}": "text default for the name",
		"/u/{user} {user}":      "id default for the name",
		"/n/{name:text} {name}": "text written",
		"/p/{slug:id} {slug}":   "id written",
		"/docs/* *":             "path default for *",
		"/src/*:text *":         "text written",
		"/w?title={page}&action={do}&post_title={x} ?title={page}":   "text default for the name",
		"/w?title={page}&action={do}&post_title={x} ?action={do}":    "id action parameter",
		"/w?title={page}&action={do}&post_title={x} ?post_title={x}": "text default for the name",
		"/find?s={query} ?s={query}":                                 "text search query",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	for _, tt := range []struct{ route, err string }{
		{"/wiki/{title:prose}", `kind "prose" must be id`},
		{"/wiki/{:text}", "malformed name"},
		{"/src/*:text/x", "* is only allowed as the last segment"},
		{"/w?do={x:text}", `parameter "do" names an action`},
	} {
		_, err := Parse([]byte("version: 1\nsites:\n  - origin: https://example.org\n    read: ['"+tt.route+"']\n"), "kinds")
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("route %s: got %v, want an error containing %q", tt.route, err, tt.err)
		}
	}
}
