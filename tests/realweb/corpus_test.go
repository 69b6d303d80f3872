// Package realweb_test reads the web's own pages through the guarded browser (the egress proxy and
// the bridge, as a run has them), over http and https: pages built on the front-end libraries most
// used on the web, each loaded from its npm package (pinned in lib/package-lock.json, installed by
// scripts/setup with npm ci) and set up as its documentation shows, and manuals the web's own
// generators built (Python's Sphinx documentation and PostgreSQL's DocBook one, from Debian's
// packages: internal/testkit/testutil.Manuals). None of these pages was written to test a guard: they are
// the ordinary inputs a guard that refuses too much would refuse (DEVELOPERS.md, rule 9).
//
// Every library page must open (no credential refusal) and its marker sentence, text a person
// sees, must be in what the model gets. A manual page must open, and the share of its innerText
// lines (as an unguarded Chromium renders them) that reach the model is measured.
package realweb_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
	"github.com/browser-agent/browser-agent/tests/realweb"
	"github.com/mxschmitt/playwright-go"
)

// corpus is the corpus served over http and https, and one guarded browser whose policy reads
// both origins.
type corpus struct {
	plain, secure *httptest.Server
	ca            *x509.Certificate
	browser       *guarded.Browser
}

func startCorpus(t testing.TB, rt *bridge.Runtime) *corpus {
	t.Helper()
	h := realweb.Handler(t)
	c := &corpus{plain: httptest.NewServer(h)}
	c.secure, c.ca = testutil.NewTLSServer(h)
	t.Cleanup(func() {
		c.plain.Close()
		c.secure.Close()
	})
	// Python's Sphinx stylesheets carry a cache-busting version (pydoctheme.css?2022.1): the
	// pages are read styled, as a person sees them.
	pol, err := policy.Parse([]byte(fmt.Sprintf(`version: 1
sites:
  - origin: %s
    read: ["/", "/*", "/python/_static/*?{version}"]
  - origin: %s
    read: ["/", "/*", "/python/_static/*?{version}"]
limits:
  max_run_bytes: 4GiB
  max_page_requests: 10000
`, c.plain.URL, c.secure.URL)), "realweb")
	if err != nil {
		t.Fatal(err)
	}
	// The browser and its proxy live as long as the context they were launched with.
	var opts []bridge.Option
	if os.Getenv("REALWEB_LOG") != "" {
		opts = append(opts, bridge.WithLogf(func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }))
	}
	c.browser, err = guarded.LaunchOn(context.Background(), rt, pol, []proxy.Option{proxy.WithUpstreamRoots(c.ca)}, opts...)
	if err != nil {
		t.Fatalf("launch the guarded browser: %v", err)
	}
	t.Cleanup(func() { c.browser.Close() })
	return c
}

// origins are the corpus's two origins by scheme.
func (c *corpus) origins() map[string]string {
	return map[string]string{"http": c.plain.URL, "https": c.secure.URL}
}

// reading is what the model got of one page.
type reading struct {
	URL        string
	Credential string // the field a refusal named, "" when the page opened
	Err        error  // any other failure
	Text       string // every chunk, in order
	Withheld   int    // text runs not proven visible
	Unproven   string
	Took       time.Duration
}

// readBound bounds the reading of one page.
const readBound = 8 * time.Minute

// read opens url in the guarded browser and reads it to its end, as a model that reads every
// chunk would.
func (c *corpus) read(url string) (r reading) {
	start := time.Now()
	r.URL = url
	defer func() { r.Took = time.Since(start) }()
	// A stuck read's bound, not a speed check: a long manual page under load takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), readBound)
	defer cancel()
	p, err := c.browser.Open(ctx, url)
	if ce, ok := errors.AsType[*bridge.CredentialError](err); ok {
		r.Credential = ce.Field
		return r
	}
	if err != nil {
		r.Err = err
		return r
	}
	var b strings.Builder
	b.WriteString(p.Text)
	r.Withheld, r.Unproven = p.Withheld, p.Unproven
	next, more := p.Next, p.More
	for i := 0; more && i < 200; i++ {
		ch, err := c.browser.Read(ctx, next)
		if err != nil {
			if ce, ok := errors.AsType[*bridge.CredentialError](err); ok {
				r.Credential = ce.Field
			} else {
				r.Err = err
			}
			r.Text = b.String() // what was handed out before the error counts
			return r
		}
		// A chunk goes on where the last ended (offsets into one text): nothing between them.
		b.WriteString(ch.Text)
		r.Withheld, r.Unproven = ch.Withheld, ch.Unproven
		if ch.Next <= next && !ch.More {
			break
		}
		next, more = ch.Next, ch.More
	}
	r.Text = b.String()
	return r
}

// plainLines are the non-empty lines of url's document.body.innerText in an unguarded Chromium:
// what a person reads there. fields are those of them that only the page's editable elements hold
// (input, textarea, select, contenteditable, role=textbox: an editor's text, a select's options):
// a field's value never reaches the model, by design, so they are counted apart.
func plainLines(t testing.TB, page playwright.Page, url string) (lines []string, fields map[string]bool) {
	t.Helper()
	if _, err := page.Goto(url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
		t.Fatalf("plain Chromium: %s: %v", url, err)
	}
	page.WaitForTimeout(300)
	v, err := page.Evaluate(`() => {
  const all = document.body.innerText;
  const s = document.createElement('style');
  s.textContent = 'input, textarea, select, [contenteditable]:not([contenteditable=false]), [role=textbox] { display: none !important; }';
  document.head.appendChild(s);
  const rest = document.body.innerText;
  s.remove();
  return [all, rest];
}`)
	if err != nil {
		t.Fatalf("plain Chromium: innerText of %s: %v", url, err)
	}
	vs, _ := v.([]any)
	split := func(x any) []string {
		s, _ := x.(string)
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = squash(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	if len(vs) != 2 {
		t.Fatalf("plain Chromium: innerText of %s: got %v", url, v)
	}
	lines, rest := split(vs[0]), split(vs[1])
	fields = map[string]bool{}
	for _, l := range lines {
		if !slices.Contains(rest, l) {
			fields[l] = true
		}
	}
	return lines, fields
}

// squash collapses runs of white space (NBSP included) to one space and trims.
func squash(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\u00a0' || r == '\r' || r == '\n' || r == '\u200b'
	}), " ")
}

// lineShare counts the lines of want found in got (both squashed) and returns the missing ones.
func lineShare(want []string, got string) (found int, missing []string) {
	g := squash(got)
	for _, l := range want {
		if strings.Contains(g, l) {
			found++
		} else {
			missing = append(missing, l)
		}
	}
	return found, missing
}

// schemes are the two schemes every page is read over.
var schemes = []string{"http", "https"}

// sortedKeys is the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
