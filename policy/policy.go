package policy

import (
	"fmt"
	"strconv"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// Verdict is the outcome of a decision. The zero value is Deny.
type Verdict int

const (
	Deny Verdict = iota
	Allow
)

func (v Verdict) String() string {
	if v == Allow {
		return "allow"
	}
	return "deny"
}

// MarshalText makes a Verdict print as "allow" or "deny" in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads "allow" or "deny", as MarshalText writes them.
func (v *Verdict) UnmarshalText(b []byte) error {
	switch string(b) {
	case "allow":
		*v = Allow
	case "deny":
		*v = Deny
	default:
		return fmt.Errorf("verdict %q is not allow or deny", Cut(string(b), 32))
	}
	return nil
}

// Reason phrases. They are fixed so that callers and tests can match them exactly.
const (
	ReasonAllowed     = "allowed read route"
	ReasonNoRule      = "no rule matched"
	ReasonMalformed   = "malformed url"
	ReasonScheme      = "scheme not allowed"
	ReasonUserinfo    = "userinfo not allowed"
	ReasonHost        = "host not allowed"
	ReasonPort        = "port not allowed"
	ReasonWriteMethod = "write method"
	ReasonWriteWord   = "write word in url"
	ReasonTooLong     = "url too long"
	// ReasonSignIn allows a request to a site's sign-in route; only DecideSignIn gives it, and
	// callers ask only while a person holds a takeover lease.
	ReasonSignIn = "sign-in route under lease"
	// ReasonUnsafeSegment: a path segment that a server could read as more than one segment, or
	// as a dot segment (an encoded / or \, a ; parameter, "." or ".." after decoding).
	ReasonUnsafeSegment = "unsafe path segment"
	// ReasonQueryParam: the path matched a read route, but the query carries a parameter the route
	// does not name (or names it twice, or with another value than the route's literal).
	ReasonQueryParam = "query parameter not allowed"
)

// Reason phrases of a request denied because a run budget (Limits) is spent. Every layer that
// enforces a budget uses the same phrase.
const (
	ReasonBudgetRunBytes     = "budget: run bytes"
	ReasonBudgetPageRequests = "budget: page requests"
)

// MaxURLLength is the longest URL, in bytes, the policy will parse (a request's URL, a redirect's
// Location, a base). Longer ones are denied. The coordinator bounds a model's url argument more
// tightly (coordinator.MaxURLArgLength).
const MaxURLLength = 8192

// Decision is the result of deciding one request.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Rule names what decided: the matching read route ("http://h:p read /records/{id}"),
	// the write word found, or "" when no rule matched.
	Rule string `json:"rule"`
	// Reason is one of the Reason* phrases.
	Reason string `json:"reason"`
	// URL is the canonical URL decided on, without fragment and with any userinfo redacted; "" when
	// the input did not parse.
	URL string `json:"canonical"`
}

// Allowed reports whether the verdict is Allow.
func (d Decision) Allowed() bool { return d.Verdict == Allow }

// DecideArgs are the inputs of Decide. New fields may be added; the zero value of each is safe.
type DecideArgs struct {
	// Method is the HTTP method. "" means GET.
	Method string
	// URL is absolute, or relative to Base.
	URL string
	// Base, when set, is the URL that URL is resolved against (a page, or the previous redirect hop).
	Base string
}

// Limits are the policy's run limits. The budgets (MaxRunBytes, MaxPageRequests,
// MaxConcurrentRequests) bound what one run may fetch; past one, requests are denied with a
// ReasonBudget* phrase and the run ends blocked.
type Limits struct {
	MaxRedirectHops int
	MaxSteps        int
	// MaxRunBytes bounds the response bytes one run may receive: the bridge counts the bodies it
	// fetches, the egress proxy the bytes it passes back.
	MaxRunBytes int64
	// MaxPageRequests bounds the subresource requests the bridge fetches for one opened page.
	MaxPageRequests int
	// MaxConcurrentRequests bounds the bridge's fetches in flight at once, and so the response
	// bodies it holds; a request beyond it waits for a free slot.
	MaxConcurrentRequests int
}

// Site is one allowed origin with its read routes.
type Site struct {
	Origin string   // canonical scheme://host[:port]
	Read   []string // route patterns as written
	Search string   // search template, "" when the site has none
	// SignIn lists the sign-in routes as written; nil when the site names none.
	SignIn []string
}

// Policy is a validated, immutable policy. It is safe for concurrent use.
type Policy struct {
	sites      []site
	approved   map[string]bool
	models     []string
	limits     Limits
	writeWords map[string]bool
	stemWords  [][]byte // writeWords, sorted, for the stem search of isWriteToken
	record     *Record  // nil when the file declares no record key
	wall       WallMode // "" when the file does not say
	guard      Guard    // zero when the file does not say: Guard() gives the defaults
}

// WallMode is a policy's "wall" key: when the run's browser runs behind the operating system's
// wall (a network namespace of its own whose only way out is the run's egress proxy; Linux).
type WallMode string

// The wall's modes.
const (
	// WallAuto walls the browser when the machine can (root, or unprivileged user namespaces),
	// and otherwise runs it behind its egress proxy alone, saying so in the run's audit row.
	WallAuto WallMode = "auto"
	// WallRequired refuses to start a browser that cannot be walled.
	WallRequired WallMode = "required"
	// WallOff never walls it: the egress proxy alone.
	WallOff WallMode = "off"
)

type site struct {
	scheme, host string
	port         int
	origin       string
	routes       []route
	search       string // search template path+query, "" when none
	signin       *signIn
	Site
}

// signIn is a site's compiled signin key.
type signIn struct {
	routes  []route
	methods map[string]bool
	wait    int // seconds
}

// URL is a URL parsed the way a browser parses it. It holds the parsed components only.
type URL struct {
	scheme   string
	host     string // canonical hostname
	port     string // explicit port as serialized, "" for the scheme's default
	dport    int    // effective port
	path     string
	query    string
	userinfo bool
	href     string // canonical, without fragment, userinfo redacted
}

var parser = whatwg.NewParser()

// ParseURL parses raw, resolved against base when base is not "", as the WHATWG URL Standard
// (and so Chromium) does. Plain canonical http(s) URLs, and the common references against such a
// base, take a fast path that FuzzFastPath, FuzzResolveFast and the WPT conformance test hold to
// the full parser's results.
func ParseURL(raw, base string) (*URL, error) {
	if len(raw) > MaxURLLength || len(base) > MaxURLLength {
		return nil, fmt.Errorf("url longer than %d bytes", MaxURLLength)
	}
	if base == "" {
		if u, ok := parseFast(raw); ok {
			return u, nil
		}
	} else if u, ok := resolveFast(raw, base); ok {
		return u, nil
	}
	var (
		u   *whatwg.Url
		err error
	)
	if base != "" {
		u, err = parser.ParseRef(base, raw)
	} else {
		u, err = parser.Parse(raw)
	}
	if err != nil {
		return nil, err
	}
	return fromWHATWG(u), nil
}

// fromWHATWG copies the components the policy decides on out of the full parser's result.
func fromWHATWG(w *whatwg.Url) *URL {
	u := &URL{
		scheme:   w.Scheme(),
		host:     w.Hostname(),
		port:     w.Port(),
		path:     w.Pathname(),
		query:    w.Query(),
		userinfo: w.Username() != "" || w.Password() != "",
	}
	if u.port == "" {
		u.dport = w.DecodedPort() // the scheme's default
	} else if n, err := strconv.Atoi(u.port); err == nil {
		// The parser has already checked that an explicit port is a number in 0..65535. It is read
		// here rather than through DecodedPort, which reports an explicit port 0 as the default.
		u.dport = n
	} else {
		u.dport = -1
	}
	if u.userinfo {
		c := w.Clone()
		c.SetUsername("redacted")
		c.SetPassword("")
		u.href = c.Href(true)
	} else {
		u.href = w.Href(true)
	}
	return u
}

// Scheme is the lower-case scheme without ":".
func (u *URL) Scheme() string { return u.scheme }

// Host is the canonical host: lower case, punycode, IPv4 dotted quad, IPv6 in brackets.
func (u *URL) Host() string { return u.host }

// Port is the effective port: the explicit one or the scheme's default (0 when there is none).
func (u *URL) Port() int { return u.dport }

// Path is the canonical path, dot segments resolved.
func (u *URL) Path() string { return u.path }

// RawQuery is the query without "?".
func (u *URL) RawQuery() string { return u.query }

// HasUserinfo reports whether the URL carries a user name or password.
func (u *URL) HasUserinfo() bool { return u.userinfo }

// String is the canonical URL without its fragment. A user name and password, if any, are
// replaced by "redacted" so that a secret in a URL never reaches a log, the model or the audit.
func (u *URL) String() string { return u.href }

// Origin is scheme://host[:port], the port omitted when it is the default.
func (u *URL) Origin() string {
	o := u.scheme + "://" + u.host
	if u.port != "" {
		o += ":" + u.port
	}
	return o
}

// Decide decides one request. The returned error is non-nil only when the engine itself failed; the
// decision then still says Deny.
func (p *Policy) Decide(a DecideArgs) (Decision, error) {
	method := strings.ToUpper(strings.TrimSpace(a.Method))
	if method == "" {
		method = "GET"
	}
	u, err := ParseURL(a.URL, a.Base)
	if err != nil {
		if len(a.URL) > MaxURLLength || len(a.Base) > MaxURLLength {
			return Decision{Reason: ReasonTooLong}, nil
		}
		return Decision{Reason: ReasonMalformed}, nil
	}
	return p.DecideURL(method, u), nil
}

// DecideURL decides a request for an already parsed URL.
func (p *Policy) DecideURL(method string, u *URL) Decision {
	d := Decision{URL: u.String()}
	switch strings.ToUpper(method) {
	case "GET", "HEAD", "":
	default:
		d.Rule = "method " + method
		d.Reason = ReasonWriteMethod
		return d
	}
	scheme := u.Scheme()
	if scheme != "http" && scheme != "https" {
		d.Rule = "scheme " + scheme
		d.Reason = ReasonScheme
		return d
	}
	if u.HasUserinfo() {
		d.Reason = ReasonUserinfo
		return d
	}
	host := normalizeHost(u.Host())
	port := u.Port()
	var buf [4]*site
	candidates := buf[:0] // on the stack for the usual one or two sites
	hostSeen := false
	for i := range p.sites {
		s := &p.sites[i]
		if s.host != host {
			continue
		}
		hostSeen = true
		if s.scheme == scheme && s.port == port {
			candidates = append(candidates, s)
		}
	}
	if len(candidates) == 0 {
		if hostSeen {
			d.Reason = ReasonPort
		} else {
			d.Reason = ReasonHost
		}
		return d
	}
	segs := splitPath(u.Path())
	// A URL is allowed by the first read route that matches its path and its query and whose parts
	// hold no command, each part read by its position (routeWrite): the kinds of the route's
	// variables decide what a write word there means.
	var (
		match, pathMatch, stemmed *route
		ms, ps                    *site
		stemWord, stemWhere       string
	)
find:
	for _, s := range candidates {
		for i := range s.routes {
			r := &s.routes[i]
			if !r.match(segs) {
				continue
			}
			if !r.queryOK(u.RawQuery()) {
				if pathMatch == nil {
					pathMatch, ps = r, s
				}
				continue
			}
			if w, where := p.routeWrite(u, segs, r); w != "" {
				if stemmed == nil {
					stemmed, stemWord, stemWhere = r, w, where
				}
				continue
			}
			match, ms = r, s
			break find
		}
	}
	if match == nil && stemmed != nil {
		return writeDecision(d, stemWord, stemWhere)
	}
	if match == nil {
		// No route takes the URL: it is denied whatever it holds. The reason names a write word
		// anywhere in it first, read as an identifier is, so that a write shows as one.
		if w, where := p.findWriteWordSegs(u, segs); w != "" {
			return writeDecision(d, w, where)
		}
	}
	for i, seg := range segs {
		if why := unsafeSegment(seg); why != "" {
			d.Rule = fmt.Sprintf("path segment %d %s", i+1, why)
			d.Reason = ReasonUnsafeSegment
			return d
		}
	}
	if match == nil {
		if w, where := p.findStemWrite(u, segs, pathMatch); w != "" {
			return writeDecision(d, w, where)
		}
	}
	switch {
	case match != nil:
		d.Verdict = Allow
		d.Rule = ms.origin + " read " + match.pattern
		d.Reason = ReasonAllowed
	case pathMatch != nil:
		d.Rule = ps.origin + " read " + pathMatch.pattern + ": query parameter not named by the route"
		d.Reason = ReasonQueryParam
	default:
		d.Reason = ReasonNoRule
	}
	return d
}

// writeDecision is the denial of a write word (or a stem, or an escape beyond the decode limit)
// found in the URL. The word is one of the policy's own, never text from the URL.
func writeDecision(d Decision, w, where string) Decision {
	if strings.HasPrefix(w, "(") { // EncodedBeyondLimit, ActionNotRead
		d.Rule = strings.Trim(w, "()") + " in " + where
	} else {
		d.Rule = fmt.Sprintf("write word %q in %s", w, where)
	}
	d.Reason = ReasonWriteWord
	return d
}

// DecideSignIn decides a write to a site's sign-in route: allowed only when the method is one the
// site names under signin, the URL's scheme, host and port are exactly the site's, its path matches
// a sign-in route exactly, it has no user name or password and no write word. It knows nothing of
// leases: a caller asks only while a person holds one, and otherwise decides with DecideURL, under
// which such a request stays a write and is denied.
func (p *Policy) DecideSignIn(method string, u *URL) Decision {
	d := Decision{URL: u.String(), Reason: ReasonNoRule}
	method = strings.ToUpper(method)
	if u.HasUserinfo() {
		d.Reason = ReasonUserinfo
		return d
	}
	host := normalizeHost(u.Host())
	segs := splitPath(u.Path())
	for i := range p.sites {
		s := &p.sites[i]
		if s.signin == nil || s.host != host || s.scheme != u.Scheme() || s.port != u.Port() {
			continue
		}
		if !s.signin.methods[method] {
			d.Rule, d.Reason = "method "+method, ReasonWriteMethod
			return d
		}
		if w, where := p.findWriteWordSegs(u, segs); w != "" {
			d.Rule, d.Reason = fmt.Sprintf("write word %q in %s", w, where), ReasonWriteWord
			return d
		}
		for k, seg := range segs {
			if why := unsafeSegment(seg); why != "" {
				d.Rule, d.Reason = fmt.Sprintf("path segment %d %s", k+1, why), ReasonUnsafeSegment
				return d
			}
		}
		for j, r := range s.signin.routes {
			if r.match(segs) {
				d.Verdict, d.Rule, d.Reason = Allow, s.origin+" signin "+s.SignIn[j], ReasonSignIn
				return d
			}
		}
	}
	return d
}

// SignInWait is how long a run that reached a sign-in page on u's site waits for a person, in
// seconds: the site's signin.wait_seconds, or DefaultSignInWait. ok is false when the site names
// no sign-in routes (the run then ends at once, as it always has).
func (p *Policy) SignInWait(u *URL) (seconds int, ok bool) {
	host := normalizeHost(u.Host())
	for i := range p.sites {
		s := &p.sites[i]
		if s.signin != nil && s.host == host && s.scheme == u.Scheme() && s.port == u.Port() {
			return s.signin.wait, true
		}
	}
	return 0, false
}

// DecideRedirect decides a redirect Location, resolved against the URL that sent it, as a new
// GET navigation.
func (p *Policy) DecideRedirect(current, location string) (Decision, error) {
	return p.Decide(DecideArgs{Method: "GET", URL: location, Base: current})
}

// normalizeHost lower-cases and trims one trailing dot. The WHATWG parser already lower-cased,
// punycoded and canonicalized IP addresses.
func normalizeHost(h string) string {
	h = strings.ToLower(h)
	if len(h) > 1 && strings.HasSuffix(h, ".") {
		h = h[:len(h)-1]
	}
	return h
}

// ModelApproved reports whether the policy approves the model name.
func (p *Policy) ModelApproved(name string) bool { return p.approved[name] }

// ApprovedModels lists the approved model names in file order.
func (p *Policy) ApprovedModels() []string { return append([]string(nil), p.models...) }

// Limits returns the run limits.
func (p *Policy) Limits() Limits { return p.limits }

// Wall is the policy's "wall" key; "" when the file does not say (the launch's default applies,
// WallAuto unless the program was told otherwise).
func (p *Policy) Wall() WallMode { return p.wall }

// Sites lists the allowed sites.
func (p *Policy) Sites() []Site {
	out := make([]Site, len(p.sites))
	for i, s := range p.sites {
		out[i] = Site{Origin: s.origin, Read: append([]string(nil), s.Read...), Search: s.Search,
			SignIn: append([]string(nil), s.SignIn...)}
	}
	return out
}

// ErrNoSearch is returned by SearchURL when no site has a search route.
var ErrNoSearch = fmt.Errorf("policy has no search route")

// SearchURL builds the URL the search_site tool opens: the first site's search template with the
// query percent-encoded in place of {query}.
func (p *Policy) SearchURL(query string) (string, error) {
	for _, s := range p.sites {
		if s.search == "" {
			continue
		}
		return s.origin + strings.Replace(s.search, "{query}", escapeQuery(query), 1), nil
	}
	return "", ErrNoSearch
}

// escapeQuery encodes a query value for the application/x-www-form-urlencoded form.
func escapeQuery(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
