package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadError is a policy file that could not be loaded. It names the file, the line and the key.
type LoadError struct {
	File string
	Line int    // 0 when unknown
	Key  string // dotted path of the key, e.g. "sites[0].origin"; "" when not about one key
	Err  error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *LoadError) Unwrap() error { return e.Err }

// str is a YAML scalar that remembers its line.
type str struct {
	V    string
	Line int
}

func (s *str) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a string", n.Line)
	}
	s.V, s.Line = n.Value, n.Line
	return nil
}

type num struct {
	V    int
	Line int
	Set  bool
}

func (x *num) UnmarshalYAML(n *yaml.Node) error {
	if err := n.Decode(&x.V); err != nil {
		return fmt.Errorf("line %d: expected a whole number", n.Line)
	}
	x.Line, x.Set = n.Line, true
	return nil
}

type fileSite struct {
	Origin str   `yaml:"origin"`
	Read   []str `yaml:"read"`
	Search str   `yaml:"search"`
	SignIn *struct {
		Routes  []str `yaml:"routes"`
		Methods []str `yaml:"methods"`
		Wait    num   `yaml:"wait_seconds"`
	} `yaml:"signin"`
	Line int `yaml:"-"`
}

type file struct {
	Version num        `yaml:"version"`
	Sites   []fileSite `yaml:"sites"`
	Models  struct {
		Approved []str `yaml:"approved"`
	} `yaml:"models"`
	Limits struct {
		MaxRedirectHops       num  `yaml:"max_redirect_hops"`
		MaxSteps              num  `yaml:"max_steps"`
		MaxRunBytes           size `yaml:"max_run_bytes"`
		MaxPageRequests       num  `yaml:"max_page_requests"`
		MaxConcurrentRequests num  `yaml:"max_concurrent_requests"`
	} `yaml:"limits"`
	// WriteWords extends DefaultWriteWords; the defaults cannot be removed.
	WriteWords []str       `yaml:"write_words"`
	Record     *fileRecord `yaml:"record"`
	// Wall is when the run's browser runs behind the operating system's wall: see WallMode.
	Wall str `yaml:"wall"`
	// Guard is how `browser-agent guard` lets the agent act: see Guard (guard.go).
	Guard *fileGuard `yaml:"guard"`
}

// fileRecord is the record key: see Record.
type fileRecord struct {
	ID struct {
		Pattern     str `yaml:"pattern"`
		Example     str `yaml:"example"`
		Description str `yaml:"description"`
	} `yaml:"id"`
	Labels []str `yaml:"labels"`
}

// Defaults for limits the file leaves out.
const (
	DefaultMaxRedirectHops       = 5
	DefaultMaxSteps              = 20
	DefaultMaxRunBytes           = 64 << 20
	DefaultMaxPageRequests       = 500
	DefaultMaxConcurrentRequests = 4
)

// Ranges of the budgets a file may set.
const (
	minRunBytes = 1 << 20
	maxRunBytes = 4 << 30
)

// size is a YAML byte count that remembers its line: a whole number of bytes, or a whole number
// followed by KiB, MiB or GiB ("128MiB", "64 MiB").
type size struct {
	V    int64
	Line int
	Set  bool
}

var reSize = regexp.MustCompile(`^([0-9]+)\s*(|B|KiB|MiB|GiB)$`)

func (x *size) UnmarshalYAML(n *yaml.Node) error {
	m := reSize.FindStringSubmatch(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || m == nil || len(m[1]) > 12 {
		return fmt.Errorf("line %d: expected a byte count: a whole number, or one followed by KiB, MiB or GiB", n.Line)
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return fmt.Errorf("line %d: expected a byte count: %v", n.Line, err)
	}
	x.V = v << map[string]int{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
	x.Line, x.Set = n.Line, true
	return nil
}

// Load reads and validates a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &LoadError{File: path, Err: err}
	}
	return Parse(data, path)
}

var (
	reFieldNotFound = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)
	reLine          = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
)

// Parse validates a policy held in memory; name is used in errors.
func Parse(data []byte, name string) (*Policy, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &LoadError{File: name, Err: errors.New("empty policy")}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, &LoadError{File: name, Err: errors.New("more than one YAML document")}
	}
	return compile(&f, name)
}

// yamlError turns a YAML decoding error into a LoadError naming the line and the key.
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if m := reFieldNotFound.FindStringSubmatch(msg); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			return &LoadError{File: name, Line: line, Key: m[2], Err: errors.New("unknown key")}
		}
		if m := reLine.FindStringSubmatch(msg); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			return &LoadError{File: name, Line: line, Err: errors.New(m[2])}
		}
		return &LoadError{File: name, Err: errors.New(msg)}
	}
	if m := reLine.FindStringSubmatch(err.Error()); m != nil {
		var line int
		fmt.Sscan(m[1], &line)
		return &LoadError{File: name, Line: line, Err: errors.New(m[2])}
	}
	return &LoadError{File: name, Err: err}
}

func compile(f *file, name string) (*Policy, error) {
	fail := func(line int, key, format string, args ...any) error {
		return &LoadError{File: name, Line: line, Key: key, Err: fmt.Errorf(format, args...)}
	}
	if !f.Version.Set {
		return nil, fail(0, "version", "missing; this program reads version: 1")
	}
	if f.Version.V != 1 {
		return nil, fail(f.Version.Line, "version", "unsupported version %d; this program reads version: 1", f.Version.V)
	}
	if len(f.Sites) == 0 {
		return nil, fail(0, "sites", "at least one site is required")
	}
	p := &Policy{
		approved:   map[string]bool{},
		writeWords: map[string]bool{},
		limits: Limits{
			MaxRedirectHops: DefaultMaxRedirectHops, MaxSteps: DefaultMaxSteps, MaxRunBytes: DefaultMaxRunBytes,
			MaxPageRequests: DefaultMaxPageRequests, MaxConcurrentRequests: DefaultMaxConcurrentRequests,
		},
	}
	for _, w := range DefaultWriteWords {
		p.writeWords[w] = true
	}
	for i, w := range f.WriteWords {
		ws := words(w.V)
		if len(ws) != 1 {
			return nil, fail(w.Line, fmt.Sprintf("write_words[%d]", i), "%q is not a single word", w.V)
		}
		p.writeWords[ws[0]] = true
	}
	for _, w := range slices.Sorted(maps.Keys(p.writeWords)) {
		p.stemWords = append(p.stemWords, []byte(w))
	}
	seen := map[string]int{}
	for i, fs := range f.Sites {
		key := fmt.Sprintf("sites[%d]", i)
		s, err := compileOrigin(fs.Origin.V)
		if err != nil {
			return nil, fail(fs.Origin.Line, key+".origin", "%v", err)
		}
		if j, dup := seen[s.origin]; dup {
			return nil, fail(fs.Origin.Line, key+".origin", "origin %s is repeated from sites[%d]", s.origin, j)
		}
		seen[s.origin] = i
		if len(fs.Read) == 0 {
			return nil, fail(fs.Origin.Line, key+".read", "at least one read route is required")
		}
		dupRoute := map[string]int{}
		for j, pat := range fs.Read {
			rkey := fmt.Sprintf("%s.read[%d]", key, j)
			r, err := compileRoute(pat.V)
			if err != nil {
				return nil, fail(pat.Line, rkey, "%v", err)
			}
			if k, dup := dupRoute[pat.V]; dup {
				return nil, fail(pat.Line, rkey, "route %q is repeated from read[%d]", pat.V, k)
			}
			dupRoute[pat.V] = j
			s.routes = append(s.routes, r)
			s.Read = append(s.Read, pat.V)
		}
		if fs.Search.V != "" {
			if err := p.checkSearch(s, fs.Search.V); err != nil {
				return nil, fail(fs.Search.Line, key+".search", "%v", err)
			}
			s.search = fs.Search.V
			s.Search = fs.Search.V
			// The template names its own parameters: a search URL is a read route of the site
			// whether or not read lists it with its query.
			if _, listed := dupRoute[fs.Search.V]; !listed {
				r, err := compileRoute(fs.Search.V)
				if err != nil {
					return nil, fail(fs.Search.Line, key+".search", "%v", err)
				}
				s.routes = append(s.routes, r)
			}
			// The search query is free text by definition, whatever its parameter is called.
			for j := range s.routes {
				if r := &s.routes[j]; r.pattern == fs.Search.V {
					r.search = true
					for name, qp := range r.query {
						if qp.param && qp.name == "query" && !actionName(name) {
							qp.kind = KindText
							r.query[name] = qp
						}
					}
				}
			}
		}
		if fs.SignIn != nil {
			if err := p.compileSignIn(s, fs, key, fail); err != nil {
				return nil, err
			}
		}
		s.Origin = s.origin
		p.sites = append(p.sites, *s)
	}
	for i, m := range f.Models.Approved {
		if strings.TrimSpace(m.V) == "" || m.V != strings.TrimSpace(m.V) {
			return nil, fail(m.Line, fmt.Sprintf("models.approved[%d]", i), "model name %q is empty or has surrounding white space", m.V)
		}
		if !p.approved[m.V] {
			p.models = append(p.models, m.V)
		}
		p.approved[m.V] = true
	}
	if f.Wall.Line > 0 {
		switch m := WallMode(f.Wall.V); m {
		case WallAuto, WallRequired, WallOff:
			p.wall = m
		default:
			return nil, fail(f.Wall.Line, "wall", "%q is not one of auto, required, off", f.Wall.V)
		}
	}
	for _, l := range []struct {
		n      num
		key    string
		lo, hi int
		dst    *int
	}{
		{f.Limits.MaxRedirectHops, "limits.max_redirect_hops", 0, 20, &p.limits.MaxRedirectHops},
		{f.Limits.MaxSteps, "limits.max_steps", 1, 200, &p.limits.MaxSteps},
		{f.Limits.MaxPageRequests, "limits.max_page_requests", 1, 10000, &p.limits.MaxPageRequests},
		{f.Limits.MaxConcurrentRequests, "limits.max_concurrent_requests", 1, 64, &p.limits.MaxConcurrentRequests},
	} {
		if !l.n.Set {
			continue
		}
		if l.n.V < l.lo || l.n.V > l.hi {
			return nil, fail(l.n.Line, l.key, "%d is out of range %d..%d", l.n.V, l.lo, l.hi)
		}
		*l.dst = l.n.V
	}
	if l := f.Limits.MaxRunBytes; l.Set {
		if l.V < minRunBytes || l.V > maxRunBytes {
			return nil, fail(l.Line, "limits.max_run_bytes", "%d is out of range 1MiB..4GiB", l.V)
		}
		p.limits.MaxRunBytes = l.V
	}
	if f.Guard != nil {
		g, err := compileGuard(f.Guard, fail)
		if err != nil {
			return nil, err
		}
		p.guard = g
	}
	if f.Record != nil {
		r, err := compileRecord(f.Record, fail)
		if err != nil {
			return nil, err
		}
		p.record = r
	}
	return p, nil
}

// Sign-in wait bounds, in seconds: how long a run waits at a sign-in page for a person.
const (
	DefaultSignInWait = 180
	minSignInWait     = 10
	maxSignInWait     = 900
)

// compileSignIn validates a site's signin key: the routes a person may submit a sign-in form to
// while holding a takeover lease, with which methods, and how long a run waits for that person.
func (p *Policy) compileSignIn(s *site, fs fileSite, key string, fail func(int, string, string, ...any) error) error {
	si := fs.SignIn
	key += ".signin"
	if len(si.Routes) == 0 {
		return fail(fs.Origin.Line, key+".routes", "at least one sign-in route is required")
	}
	s.signin = &signIn{methods: map[string]bool{}, wait: DefaultSignInWait}
	dup := map[string]int{}
	for j, pat := range si.Routes {
		rkey := fmt.Sprintf("%s.routes[%d]", key, j)
		r, err := compileRoute(pat.V)
		if err != nil {
			return fail(pat.Line, rkey, "%v", err)
		}
		if strings.ContainsAny(pat.V, "*{?") {
			return fail(pat.Line, rkey, "sign-in route %q must be an exact path, with no *, {parameter} or query", pat.V)
		}
		if k, d := dup[pat.V]; d {
			return fail(pat.Line, rkey, "route %q is repeated from routes[%d]", pat.V, k)
		}
		if u, err := ParseURL(s.origin+pat.V, ""); err == nil {
			if w, _ := p.findWriteWordSegs(u, splitPath(u.Path())); w != "" {
				return fail(pat.Line, rkey, "sign-in route %q holds the write word %q and would always be denied", pat.V, w)
			}
		}
		dup[pat.V] = j
		s.signin.routes = append(s.signin.routes, r)
		s.SignIn = append(s.SignIn, pat.V)
	}
	if len(si.Methods) == 0 {
		return fail(fs.Origin.Line, key+".methods", "at least one method is required, e.g. [POST]")
	}
	for j, m := range si.Methods {
		if m.V != "POST" {
			return fail(m.Line, fmt.Sprintf("%s.methods[%d]", key, j), "method %q: only POST may be named (reads are GET, under read)", m.V)
		}
		s.signin.methods[m.V] = true
	}
	if w := si.Wait; w.Set {
		if w.V < minSignInWait || w.V > maxSignInWait {
			return fail(w.Line, key+".wait_seconds", "%d is out of range %d..%d", w.V, minSignInWait, maxSignInWait)
		}
		s.signin.wait = w.V
	}
	return nil
}

// compileOrigin parses "scheme://host[:port]" exactly: http or https, no userinfo, no path other
// than "/", no query or fragment. The host is canonicalized as the browser would.
func compileOrigin(raw string) (*site, error) {
	if raw == "" {
		return nil, errors.New("missing; write scheme://host:port, e.g. http://127.0.0.1:8081")
	}
	if strings.TrimSpace(raw) != raw {
		return nil, fmt.Errorf("origin %q has surrounding white space", raw)
	}
	u, err := ParseURL(raw, "")
	if err != nil {
		return nil, fmt.Errorf("origin %q does not parse as a URL: %v", raw, err)
	}
	if u.Scheme() != "http" && u.Scheme() != "https" {
		return nil, fmt.Errorf("origin %q: scheme must be http or https", raw)
	}
	if u.HasUserinfo() {
		return nil, fmt.Errorf("origin %q must not carry a user name or password", raw)
	}
	if u.Host() == "" {
		return nil, fmt.Errorf("origin %q has no host", raw)
	}
	rest := strings.TrimPrefix(raw, u.Scheme()+"://")
	if strings.ContainsAny(rest, "/?#\\") && !(strings.HasSuffix(rest, "/") && strings.Count(rest, "/") == 1 && !strings.ContainsAny(rest, "?#\\")) {
		return nil, fmt.Errorf("origin %q must be scheme://host[:port] with no path, query or fragment", raw)
	}
	if u.Path() != "/" || u.RawQuery() != "" {
		return nil, fmt.Errorf("origin %q must be scheme://host[:port] with no path, query or fragment", raw)
	}
	return &site{
		scheme: u.Scheme(),
		host:   normalizeHost(u.Host()),
		port:   u.Port(),
		origin: u.Origin(),
	}, nil
}

// checkSearch validates a search template: a path with one {query} placeholder in the query
// string, whose path the site's own read routes allow. The template is then a read route itself
// (see compile), so the parameters it names are accepted on that path.
func (p *Policy) checkSearch(s *site, tmpl string) error {
	if !strings.HasPrefix(tmpl, "/") {
		return fmt.Errorf("search %q must start with /", tmpl)
	}
	if strings.Count(tmpl, "{query}") != 1 {
		return fmt.Errorf("search %q must contain {query} exactly once", tmpl)
	}
	path, q, ok := strings.Cut(tmpl, "?")
	if !ok || !strings.Contains(q, "{query}") {
		return fmt.Errorf("search %q must put {query} in the query string, e.g. /search?q={query}", tmpl)
	}
	if _, err := ParseURL(s.origin+strings.Replace(tmpl, "{query}", "sample", 1), ""); err != nil {
		return fmt.Errorf("search %q does not form a URL: %v", tmpl, err)
	}
	u, err := ParseURL(s.origin+path, "")
	if err != nil {
		return fmt.Errorf("search %q does not form a URL: %v", tmpl, err)
	}
	probe := &Policy{sites: []site{*s}, writeWords: p.writeWords, stemWords: p.stemWords}
	if d := probe.DecideURL("GET", u); !d.Allowed() {
		return fmt.Errorf("search path %q is not allowed by this site's read routes (%s)", path, d.Reason)
	}
	return nil
}
