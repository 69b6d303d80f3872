package browsertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// DefaultChunk is the number of characters of visible text in one chunk.
const DefaultChunk = 2000

// maxBody bounds a response body.
const maxBody = 2 << 20

// HTTP is a fake browser that fetches pages with net/http. It never follows a redirect by itself:
// it walks every redirect chain with the bridge's bridge.Redirects, so each Location is decided
// exactly as the bridge decides it. It is safe for
// concurrent use.
type HTTP struct {
	pol    *policy.Policy
	client *http.Client
	chunk  int

	mu     sync.Mutex
	cur    *page
	opened []string
}

// page is a parsed page.
type page struct {
	url, title string
	heading    string // the first h1's text
	status     int
	text       []rune
	links      []browse.Link
	fields     []browse.Field
	truncated  bool
}

// NewHTTP returns a fake browser that reads the sites pol allows.
func NewHTTP(pol *policy.Policy) *HTTP {
	return &HTTP{
		pol:   pol,
		chunk: DefaultChunk,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
}

// Opened lists every URL Open was asked for, in order, denied ones included.
func (b *HTTP) Opened() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.opened)
}

// Close releases idle connections.
func (b *HTTP) Close() error {
	b.client.CloseIdleConnections()
	return nil
}

// Open navigates to raw.
func (b *HTTP) Open(ctx context.Context, raw string) (browse.Page, error) {
	b.mu.Lock()
	b.opened = append(b.opened, raw)
	b.cur = nil
	b.mu.Unlock()

	d, err := b.pol.Decide(policy.DecideArgs{Method: "GET", URL: raw})
	if err != nil {
		return browse.Page{}, err
	}
	if !d.Allowed() {
		return browse.Page{}, &browse.DeniedError{URL: raw, Decision: d}
	}
	// The bridge's own walk decides every hop: this double differs from the bridge in how it
	// fetches and reads a page, never in which URLs it may fetch.
	walk := bridge.NewRedirects(b.pol, d.URL)
	for {
		target := walk.URL()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return browse.Page{}, fmt.Errorf("open %s: %w", target, err)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			return browse.Page{}, fmt.Errorf("open %s: %w", target, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		resp.Body.Close()
		if err != nil {
			return browse.Page{}, fmt.Errorf("open %s: %w", target, err)
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			if _, _, err := walk.Follow(resp.StatusCode, resp.Header.Get("Location")); err != nil {
				if _, denied := err.(*browse.DeniedError); denied {
					return browse.Page{}, err
				}
				return browse.Page{}, fmt.Errorf("open %s: %w", raw, err)
			}
			continue
		}
		truncated := len(body) > maxBody
		if truncated {
			body = body[:maxBody]
		}
		p, err := b.parse(target, resp.StatusCode, string(body))
		if err != nil {
			return browse.Page{}, err
		}
		p.truncated = truncated
		b.mu.Lock()
		b.cur = p
		b.mu.Unlock()
		text, next, more := chunk(p.text, 0, b.chunk)
		return browse.Page{URL: p.url, Title: p.title, Heading: p.heading, Status: p.status, Text: text, Next: next, More: more, Truncated: truncated, Hops: walk.Hops()}, nil
	}
}

// Read returns the chunk at offset.
func (b *HTTP) Read(ctx context.Context, offset int) (browse.Chunk, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return browse.Chunk{}, browse.ErrNoPage
	}
	text, next, more := chunk(b.cur.text, offset, b.chunk)
	return browse.Chunk{Text: text, Offset: min(offset, len(b.cur.text)), Next: next, More: more}, nil
}

// Links lists the current page's anchors, decided by the policy.
func (b *HTTP) Links(ctx context.Context) ([]browse.Link, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return nil, browse.ErrNoPage
	}
	return slices.Clone(b.cur.links), nil
}

// Fields returns the current page's labelled fields.
func (b *HTTP) Fields(ctx context.Context) ([]browse.Field, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return nil, browse.ErrNoPage
	}
	return slices.Clone(b.cur.fields), nil
}

func chunk(text []rune, offset, size int) (string, int, bool) {
	if offset < 0 {
		offset = 0
	}
	if offset > len(text) {
		offset = len(text)
	}
	end := min(offset+size, len(text))
	return string(text[offset:end]), end, end < len(text)
}

// parse reads an HTML document. A page with a credential field gives ErrCredentialRequired and
// nothing else.
func (b *HTTP) parse(url string, status int, body string) (*page, error) {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	if HasCredentialField(doc) {
		return nil, &browse.CredentialError{URL: url, Field: credentialFieldOf(doc)}
	}
	p := &page{url: url, status: status}
	var text strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if hiddenElement(n) {
				return
			}
			switch n.DataAtom {
			case atom.Title:
				p.title = collapse(textOf(n))
				return
			case atom.H1:
				if p.heading == "" {
					p.heading = collapse(textOf(n))
				}
			case atom.A:
				if href, ok := attr(n, "href"); ok {
					p.links = append(p.links, b.link(len(p.links)+1, collapse(textOf(n)), href, url))
				}
			case atom.Dl:
				p.fields = append(p.fields, dlFields(n)...)
			case atom.Tr:
				p.fields = append(p.fields, rowField(n)...)
			}
		}
		if n.Type == html.TextNode {
			if t := collapse(n.Data); t != "" {
				if text.Len() > 0 {
					text.WriteByte(' ')
				}
				text.WriteString(t)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && blockElement(n.DataAtom) && text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
			text.WriteByte('\n')
		}
	}
	walk(doc)
	p.text = []rune(strings.TrimSpace(strings.ReplaceAll(text.String(), "\n ", "\n")))
	return p, nil
}

func (b *HTTP) link(n int, text, href, base string) browse.Link {
	l := browse.Link{N: n, Text: text, Reason: policy.ReasonMalformed}
	u, err := policy.ParseURL(href, base)
	if err != nil {
		return l
	}
	l.URL = u.String()
	d := b.pol.DecideURL("GET", u)
	l.Allowed, l.Reason = d.Allowed(), d.Reason
	return l
}

func dlFields(dl *html.Node) []browse.Field {
	var out []browse.Field
	label := ""
	for c := dl.FirstChild; c != nil; c = c.NextSibling {
		switch c.DataAtom {
		case atom.Dt:
			label = collapse(textOf(c))
		case atom.Dd:
			if label != "" {
				out = append(out, browse.Field{Label: label, Value: collapse(textOf(c))})
			}
		}
	}
	return out
}

func rowField(tr *html.Node) []browse.Field {
	var th, td *html.Node
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.DataAtom == atom.Th && th == nil:
			th = c
		case c.DataAtom == atom.Td && td == nil:
			td = c
		}
	}
	if th == nil || td == nil {
		return nil
	}
	return []browse.Field{{Label: collapse(textOf(th)), Value: collapse(textOf(td))}}
}

var reCredentialName = regexp.MustCompile(`(?i)pass|pwd|otp|one.?time|totp|mfa|2fa|card.?num|cc.?num|cvv|cvc|csc|pin\b`)

var credentialAutocomplete = []string{"current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp"}

// HasCredentialField reports whether the document holds a field for a password, a one-time code or
// a card number.
func HasCredentialField(doc *html.Node) bool {
	found := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if found {
			return
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Input || n.DataAtom == atom.Textarea) {
			typ, _ := attr(n, "type")
			ac, _ := attr(n, "autocomplete")
			name, _ := attr(n, "name")
			id, _ := attr(n, "id")
			switch {
			case strings.EqualFold(typ, "password"):
				found = true
			case slices.ContainsFunc(strings.Fields(strings.ToLower(ac)), func(t string) bool { return slices.Contains(credentialAutocomplete, t) }):
				found = true
			case reCredentialName.MatchString(name) || reCredentialName.MatchString(id):
				found = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return found
}

// credentialFieldOf names the first field of doc the bridge's own detection calls a credential
// field (bridge.CredentialField, on the element's attributes), or "".
func credentialFieldOf(doc *html.Node) string {
	var walk func(n *html.Node) string
	walk = func(n *html.Node) string {
		if n.Type == html.ElementNode && (n.DataAtom == atom.Input || n.DataAtom == atom.Textarea || n.DataAtom == atom.Select) {
			c := bridge.Control{Tag: n.Data}
			c.Type, _ = attr(n, "type")
			c.Autocomplete, _ = attr(n, "autocomplete")
			for _, k := range []string{"name", "id", "placeholder", "aria-label", "title"} {
				if v, ok := attr(n, k); ok {
					c.Names = append(c.Names, v)
				}
			}
			if why := bridge.CredentialField(c); why != "" {
				return why
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if why := walk(c); why != "" {
				return why
			}
		}
		return ""
	}
	return walk(doc)
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

// hiddenElement reports elements whose text a reader does not see.
func hiddenElement(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Template, atom.Noscript:
		return true
	}
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	if v, _ := attr(n, "aria-hidden"); v == "true" {
		return true
	}
	style, _ := attr(n, "style")
	style = strings.ReplaceAll(strings.ToLower(style), " ", "")
	return strings.Contains(style, "display:none") || strings.Contains(style, "visibility:hidden")
}

func blockElement(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd, atom.H1, atom.H2, atom.H3,
		atom.H4, atom.Section, atom.Article, atom.Nav, atom.Main, atom.Footer, atom.Header, atom.Tr, atom.Table,
		atom.Form, atom.Br, atom.Title:
		return true
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && hiddenElement(n) {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Page is a canned page served by Pages.
type Page struct {
	Title   string
	Heading string // the main heading (the first visible h1)
	Status  int    // 0 means 200
	Text    string
	Links   []browse.Link
	Fields  []browse.Field
	// Err, when set, is what Open returns for this page, e.g. browse.ErrCredentialRequired.
	Err error
	// ReadErr, when set, is what Links and Fields return once the page is open: a credential
	// field that appeared after the page loaded, say.
	ReadErr error
	// FinalURL, when set, is the URL Open reports as where it ended.
	FinalURL string
}

// Pages is a fake browser over canned pages, keyed by exact URL. It decides nothing: it shows what
// the coordinator does with whatever a browser returns. It is safe for concurrent use.
type Pages struct {
	// Chunk is the number of characters per chunk; 0 means DefaultChunk.
	Chunk int

	mu     sync.Mutex
	pages  map[string]Page
	cur    *Page
	curURL string
	opened []string
	calls  []string
}

// NewPages returns a fake browser serving pages. A URL not in pages opens a 404 page.
func NewPages(pages map[string]Page) *Pages {
	return &Pages{pages: pages}
}

// Opened lists every URL Open was asked for, in order.
func (b *Pages) Opened() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.opened)
}

// Calls lists every call, as "Open URL", "Read N", "Links" or "Fields".
func (b *Pages) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// Open returns the canned page for url.
func (b *Pages) Open(ctx context.Context, url string) (browse.Page, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opened = append(b.opened, url)
	b.calls = append(b.calls, "Open "+url)
	b.cur = nil
	if err := ctx.Err(); err != nil {
		return browse.Page{}, err
	}
	p, ok := b.pages[url]
	if !ok {
		p = Page{Title: "Not found", Status: http.StatusNotFound, Text: "No page lives here."}
	}
	if p.Err != nil {
		return browse.Page{}, p.Err
	}
	if p.Status == 0 {
		p.Status = http.StatusOK
	}
	final := url
	if p.FinalURL != "" {
		final = p.FinalURL
	}
	b.cur, b.curURL = &p, final
	text, next, more := chunk([]rune(p.Text), 0, b.size())
	return browse.Page{URL: final, Title: p.Title, Heading: p.Heading, Status: p.Status, Text: text, Next: next, More: more}, nil
}

func (b *Pages) size() int {
	if b.Chunk > 0 {
		return b.Chunk
	}
	return DefaultChunk
}

// Read returns the chunk of the current page at offset.
func (b *Pages) Read(ctx context.Context, offset int) (browse.Chunk, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, fmt.Sprintf("Read %d", offset))
	if b.cur == nil {
		return browse.Chunk{}, browse.ErrNoPage
	}
	rs := []rune(b.cur.Text)
	text, next, more := chunk(rs, offset, b.size())
	return browse.Chunk{Text: text, Offset: min(max(offset, 0), utf8.RuneCountInString(b.cur.Text)), Next: next, More: more}, nil
}

// Links returns the current page's canned links.
func (b *Pages) Links(ctx context.Context) ([]browse.Link, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "Links")
	if b.cur == nil {
		return nil, browse.ErrNoPage
	}
	if b.cur.ReadErr != nil {
		return nil, b.cur.ReadErr
	}
	return slices.Clone(b.cur.Links), nil
}

// Fields returns the current page's canned fields.
func (b *Pages) Fields(ctx context.Context) ([]browse.Field, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "Fields")
	if b.cur == nil {
		return nil, browse.ErrNoPage
	}
	if b.cur.ReadErr != nil {
		return nil, b.cur.ReadErr
	}
	return slices.Clone(b.cur.Fields), nil
}
