package bridge

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
	"github.com/browser-agent/browser-agent/internal/invisible"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// The conservation law on real manuals (issue 48): every text node of a page is handed out or
// withheld with a reason, and what a person reads reaches the model. Pages of PostgreSQL's,
// Python's and SQLite's manuals, as Debian installs them (scripts/setup), served over http and
// https, each read through the bridge to its end and compared with a plain Chromium's view of it:
// its text nodes (every frame, open shadow roots) and its innerText, line by line.

// manualPages is how many sampled pages of each manual the suite reads (besides the named
// ones); $BRIDGE_MANUAL_PAGES reads more (the benchmark in BENCHMARKS.md: 0 for every page, -1
// for the named pages only).
const manualPages = 6

// manualMaxSize leaves the largest pages (indexes of a whole manual) out of the suite's sample,
// to keep its time modest; the benchmark reads them ($BRIDGE_MANUAL_MAX, bytes).
const manualMaxSize = 200 << 10

// minLineShare is the least share of a page's innerText lines that must reach the model.
const minLineShare = 0.995

// namedPages are read on both schemes, whatever the sample: the pages issue 48 measured.
var namedPages = map[string][]string{
	"postgresql": {"plpgsql-control-structures.html", "pgbench.html", "sql-select.html", "functions-matching.html"},
}

// pageCount is what the plain browser sees of a page: the characters other than white space of
// its text nodes (every frame, open shadow roots) and its innerText.
type pageCount struct {
	Chars int    `json:"chars"`
	Inner string `json:"inner"`
}

// countJS counts a page's text nodes as the reader's account does (js/reader/90_result.js).
const countJS = `() => {
  const WS = /\s+/g, PAIRS = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;
  let n = 0;
  const v = (x) => {
    if (x.nodeType === 3) { const y = x.data.replace(WS, ''); n += y.length - (y.match(PAIRS) || []).length; }
    if (x.shadowRoot) v(x.shadowRoot);
    for (let c = x.firstChild; c; c = c.nextSibling) v(c);
  };
  v(document);
  return { chars: n, inner: document.body ? document.body.innerText : '' };
}`

// manualSample is the manual's pages the suite reads: the named ones, then n more spread evenly
// over its pages in name order (every page when n is 0), up to maxSize bytes each.
func manualSample(t testing.TB, m testutil.Manual, n int, maxSize int64) []string {
	var all []string
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "_") {
			return filepath.SkipDir // Sphinx's sources, downloads and static files
		}
		if !d.IsDir() && strings.HasSuffix(p, ".html") {
			if fi, err := os.Stat(p); err == nil && (maxSize <= 0 || fi.Size() <= maxSize) {
				rel, _ := filepath.Rel(m.Dir, p)
				all = append(all, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", m.Dir, err)
	}
	slices.Sort(all)
	out := slices.Clone(namedPages[m.Name])
	if n < 0 {
		return out // the named pages only
	}
	if n == 0 || n >= len(all) {
		n = len(all)
	}
	for i := range n {
		if p := all[i*len(all)/n]; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// manualResult is one page read through the bridge and compared.
type manualResult struct {
	lines, reached int
	whole          int  // lines reached with innerText's white space
	timedOut       bool // the bridge's time bound ran out before every run was decided
	account        Account
	total          int
	credential     bool   // withheld whole: the page showed a credential field
	refused        string // the policy refused the page's URL (the reason)
}

// TestManualsConservation reads a sample of each manual's pages, alternating http and https
// (the named pages on both), and asserts on every page: the account covers exactly the
// characters of the page's text nodes (handed out + pending + withheld), nothing is left
// pending at the end, the text handed out holds exactly the characters counted handed out, and
// at least minLineShare of innerText's lines reached the model (the rest counted withheld).
func TestManualsConservation(t *testing.T) {
	// $BRIDGE_MANUAL_NAMED=manual:path,... reads those pages too, on both schemes (with
	// BRIDGE_MANUAL_PAGES=-1: the named pages only).
	for _, mp := range strings.Split(os.Getenv("BRIDGE_MANUAL_NAMED"), ",") {
		if m, p, ok := strings.Cut(mp, ":"); ok && !slices.Contains(namedPages[m], p) {
			namedPages[m] = append(namedPages[m], p)
		}
	}
	n := envInt("BRIDGE_MANUAL_PAGES", manualPages)
	maxSize := int64(envInt("BRIDGE_MANUAL_MAX", manualMaxSize))
	for _, m := range testutil.Manuals {
		t.Run(m.Name, func(t *testing.T) {
			m := testutil.ManualByName(t, m.Name)
			plainSrv, secureSrv, ca := testutil.ServeDir(t, m.Dir)
			pages := manualSample(t, m, n, maxSize)
			var sum manualResult
			pagesRead, low, credential, timedOut := 0, 0, 0, 0
			var refused []string
			for _, scheme := range []string{"http", "https"} {
				srv := plainSrv
				if scheme == "https" {
					srv = secureSrv
				}
				// Over http one pixel phase has time to decide a whole page, as on a fast machine:
				// the shots then follow the first shot's new layout in the same phase (issue 48's
				// loss). Over https the bridge's own bounds, as in production.
				s := manualSession(t, srv.URL, ca, scheme == "http")
				for i, p := range pages {
					named := slices.Contains(namedPages[m.Name], p)
					if !named && (i%2 == 0) != (scheme == "http") {
						continue
					}
					r := readManualPage(t, s, srv.URL+"/"+p, plainSrv.URL+"/"+p, m.Name+" "+scheme+" "+p)
					if r.credential {
						credential++
						continue
					}
					if r.refused != "" && named {
						t.Errorf("%s %s %s: a named page refused by the policy: %s", m.Name, scheme, p, r.refused)
					}
					if r.refused != "" {
						refused = append(refused, scheme+" "+p+" ("+r.refused+")")
						continue
					}
					pagesRead++
					sum.lines += r.lines
					sum.reached += r.reached
					sum.whole += r.whole
					sum.total += r.total
					sum.account.Add(r.account)
					if float64(r.reached) < minLineShare*float64(r.lines) {
						low++
					}
					if r.timedOut {
						timedOut++
					}
				}
			}
			t.Logf("%s: %d pages, %d lines of %d whole as innerText has them (%.2f%%)", m.Name, pagesRead, sum.whole, sum.lines, 100*float64(sum.whole)/float64(max(sum.lines, 1)))
			t.Logf("%s: %d pages, %d of %d innerText lines reached the model (%.2f%%), %d pages under %.1f%% (%d of them as the time bound ran out); %d characters: %d handed out, withheld %v",
				m.Name, pagesRead, sum.reached, sum.lines, 100*float64(sum.reached)/float64(max(sum.lines, 1)), low, 100*minLineShare, timedOut,
				sum.total, sum.account.Handed, sum.account.Withheld)
			if len(refused) > 0 {
				// A guard refusing what a person may read: counted and named here, not read (a
				// named page refused fails above).
				t.Logf("%s: %d pages refused by the policy, not read: %v", m.Name, len(refused), refused)
			}
			if credential > 0 {
				// Until the credential watch tells a field that was never rendered from one that
				// was (issue 47: jQuery 1-3's detached feature-test input), such a page is withheld
				// whole: nothing of it is handed out, which readManualPage checked.
				t.Logf("%s: %d pages withheld whole for a credential field (issue 47)", m.Name, credential)
			}
		})
	}
}

// manualSession is a guarded session whose policy reads every path of origin; https is fetched
// trusting ca only. onePhase gives a pixel phase time to decide a whole page.
func manualSession(t *testing.T, origin string, ca *x509.Certificate, onePhase bool) *Session {
	t.Helper()
	// A manual's page names are free text, as a documentation site's policy says ("*:text":
	// PostgreSQL's sql-delete.html documents DELETE), and Sphinx's stylesheets carry a
	// cache-busting version ("pydoctheme.css?2022.1"): the page is read styled, as a person sees it.
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/*:text\", \"/_static/*?{version}\"]\n", origin)), "manuals")
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{WithLogf(testLogf)}
	if onePhase {
		opts = append(opts, WithNavigationTimeout(2*time.Minute), func(c *config) { c.pixelTime = time.Minute })
	}
	if strings.HasPrefix(origin, "https:") {
		pool := x509.NewCertPool()
		pool.AddCert(ca)
		opts = append(opts, WithProxyRoots(pool))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := testRT.Launch(ctx, pol, opts...)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readManualPage opens url in s, reads it to its end and compares it with a plain Chromium's
// view of the same page at plainURL (1280x720, as the bridge's). A page withheld for a credential
// field must hand out nothing: Open's error and no text.
func readManualPage(t *testing.T, s *Session, url, plainURL, name string) manualResult {
	t.Helper()
	pp := plainPage(t)
	if err := pp.SetViewportSize(1280, 720); err != nil {
		t.Fatal(err)
	}
	if _, err := pp.Goto(plainURL, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
		t.Fatalf("%s: plain goto: %v", name, err)
	}
	raw, err := pp.Evaluate(countJS)
	if err != nil {
		t.Fatalf("%s: count: %v", name, err)
	}
	_ = pp.Close()
	obj, _ := raw.(map[string]any)
	total, inner := 0, ""
	if obj != nil {
		if v, ok := obj["chars"].(int); ok {
			total = v
		} else if v, ok := obj["chars"].(float64); ok {
			total = int(v)
		}
		inner, _ = obj["inner"].(string)
	}

	// A bound for a stuck read, not a speed check: a long page under the suite's load is read in
	// a few phases, each of which lays the whole page out again.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	p, err := s.Open(ctx, url)
	if errors.Is(err, ErrCredentialRequired) {
		if p.Text != "" || p.Account.Handed != 0 {
			t.Errorf("%s: withheld for a credential field, yet %d bytes of text handed out", name, len(p.Text))
		}
		if c, err := s.Read(ctx, 0); !errors.Is(err, ErrCredentialRequired) || c.Text != "" {
			t.Errorf("%s: withheld for a credential field, yet Read answers %v with %d bytes", name, err, len(c.Text))
		}
		testLogf("%s: withheld whole: a credential field", name)
		return manualResult{credential: true}
	}
	if de, ok := errors.AsType[*DeniedError](err); ok && de.Hop == 0 {
		// The policy refuses the page's own URL (a write word where the policy reads a command):
		// nothing was read, and the summary counts it.
		testLogf("%s: refused by the policy: %v", name, err)
		return manualResult{refused: de.Decision.Reason}
	}
	if err != nil {
		t.Fatalf("%s: Open: %v", name, err)
	}
	var b strings.Builder
	b.WriteString(p.Text)
	acc, more, off := p.Account, p.More, p.Next
	for i := 0; more; i++ {
		c, err := s.Read(ctx, off)
		if err != nil {
			t.Fatalf("%s: Read(%d): %v", name, off, err)
		}
		b.WriteString(c.Text)
		acc, more, off = c.Account, c.More, c.Next
		if i > 500 {
			t.Fatalf("%s: no end after %d reads", name, i)
		}
	}
	text := b.String()

	// The law: every character of every text node is counted once, handed out or withheld.
	if acc.Pending != 0 {
		t.Errorf("%s: %d characters still pending at the end of the page", name, acc.Pending)
	}
	if acc.Total() != total {
		t.Errorf("%s: the account covers %d characters (%d handed out, %d pending, withheld %v, frames lost %d); the page's text nodes hold %d",
			name, acc.Total(), acc.Handed, acc.Pending, acc.Withheld, acc.FramesLost, total)
	}
	if got := nonSpace(text); got != acc.Handed {
		t.Errorf("%s: the text handed out holds %d characters; the account says %d", name, got, acc.Handed)
	}

	// What a person reads reaches the model: innerText's lines, white space aside and the code
	// points no font draws taken out (DocBook puts zero-width spaces in long table lines as break
	// opportunities; the reader withholds them, counted as invisible characters).
	// White space is taken out altogether, as the law counts: a paragraph whose runs two reads
	// decided comes in two parts with a break between them ("OSError" then ", as described"), every
	// character handed out and in order.
	norm := func(x string) string {
		x, _ = invisible.Strip(x)
		return strings.Join(strings.Fields(x), "")
	}
	got := norm(text)
	// Whole: the line in one piece, its words one space apart as innerText has them, not broken
	// across the reader's lines.
	spaced := func(x string) string {
		x, _ = invisible.Strip(x)
		return strings.Join(strings.Fields(x), " ")
	}
	var gotLines []string
	for _, l := range strings.Split(text, "\n") {
		gotLines = append(gotLines, spaced(l))
	}
	gotSpaced := strings.Join(gotLines, "\n")
	r := manualResult{account: acc, total: total}
	var missed, broken []string
	for _, line := range strings.Split(inner, "\n") {
		l := norm(line)
		if l == "" {
			continue
		}
		r.lines++
		switch {
		case !strings.Contains(got, l):
			if len(missed) < 5 {
				missed = append(missed, l)
			}
		case strings.Contains(gotSpaced, spaced(line)):
			r.reached++
			r.whole++
		default:
			r.reached++
			if len(broken) < 5 {
				broken = append(broken, spaced(line))
			}
		}
	}
	// The share is the reader's promise where it decided every run. A run still undecided when the
	// bridge's time bound ran out (a loaded machine: the suite's other packages) is withheld and
	// said so, as it must be; how often that happens is a speed figure, measured in benchmarks and
	// never asserted against a clock here: such a page is logged, not failed.
	switch {
	case float64(r.reached) >= minLineShare*float64(r.lines):
	case acc.Withheld[readerjs.WhyUnproven] > 0:
		r.timedOut = true
		t.Logf("%s: %d of %d innerText lines reached the model; %d characters withheld as not proven visible in time (the bound ran out under load)",
			name, r.reached, r.lines, acc.Withheld[readerjs.WhyUnproven])
	default:
		t.Errorf("%s: %d of %d innerText lines reached the model (under %.1f%%); withheld %v; first missed: %q",
			name, r.reached, r.lines, 100*minLineShare, acc.Withheld, missed)
	}
	// Lines whose every character reached the model, but not as innerText has them (a break or
	// other white space inside): logged with their share, so that a paragraph broken between two
	// reads shows (white space differs from innerText's in places by design: a table cell's tab).
	if r.whole < r.reached {
		t.Logf("%s: %d of %d lines reached the model with other white space inside: first %q", name, r.reached-r.whole, r.reached, broken)
	}
	testLogf("%s: %d/%d lines, %d chars, account %+v", name, r.reached, r.lines, total, acc)
	return r
}
