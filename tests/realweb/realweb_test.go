package realweb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/tests/realweb"
	"github.com/mxschmitt/playwright-go"
)

// One driver for the guarded browsers and one unguarded Chromium (for what a person reads) per
// package; each test shares one guarded browser across its pages, as a run does.
var (
	rt    *bridge.Runtime
	plain *testbrowser.Package
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	var err error
	if rt, err = bridge.NewRuntime(); err != nil {
		// Never skip: a machine without Chromium or the driver fails the package.
		fmt.Fprintf(os.Stderr, "FAIL: the real-web tests drive a real Chromium: %v (run scripts/setup)\n", err)
		return 1
	}
	defer rt.Close()
	if plain, err = testbrowser.Start(nil); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer plain.Close()
	return m.Run()
}

// plainPage is a page of the unguarded Chromium, closed with the test.
func plainPage(t testing.TB) playwright.Page {
	t.Helper()
	ctx, err := plain.Browser.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	p, err := ctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readerLoss are library pages whose marker may not reach the model for a reason of the reader's
// (logged, counted by BenchmarkRealWeb), not a refusal. It is empty: the animated pages that were
// here (gsap, popper, toastr, aos, codemirror5: a tween, a toast that fades in, a tooltip placed a
// frame late, an editor's cursor) read since a change during the shots voids only the runs it
// may have drawn over (issue 46); before, such a change voided the whole read.
var readerLoss = map[string]bool{}

// TestLibraryPages opens every library page over http and https in one guarded browser: each
// opens (a credential refusal names the field it saw, and fails the test) and its marker, text a
// person sees, is in what the model gets.
func TestLibraryPages(t *testing.T) {
	c := startCorpus(t, rt)
	names := realweb.LibraryPages(t)
	if len(names) < 40 {
		t.Fatalf("%d library pages, want at least 40", len(names))
	}
	for _, scheme := range schemes {
		for _, name := range names {
			t.Run(scheme+"/"+name, func(t *testing.T) {
				r := c.read(c.origins()[scheme] + "/pages/" + name + ".html")
				switch {
				case r.Credential != "":
					t.Fatalf("refused as a sign-in page: %s", r.Credential)
				case r.Err != nil:
					t.Fatalf("read: %v", r.Err)
				}
				marker := "RW-" + name + "-ok"
				switch {
				case strings.Contains(r.Text, marker):
				case readerLoss[name]:
					t.Logf("opened; the marker %s did not reach the model (the reader's loss on an animated page, issue 48): %d runs withheld, text %q", marker, r.Withheld, r.Text)
				default:
					t.Errorf("the marker %s is not in what the model got (%d runs withheld: %s):\n%s", marker, r.Withheld, r.Unproven, r.Text)
				}
			})
		}
	}
}

// TestManualPages opens ten pages of Python's Sphinx documentation (the ones the issue names)
// and four of PostgreSQL's DocBook manual, over http and https by turns, in one guarded browser: each opens
// (Sphinx's pages load jQuery 3 from Debian's libjs-jquery), a first chunk without text says
// why, and the page's heading (the h1, else the title) as a person sees it is in the first reads
// from the top (logged when it is not in the first chunk: a long page's proof may take more than
// open_url's time). How much of each page's text reaches the
// model when it is read to the end is BenchmarkRealWeb's figure (minutes on the long pages).
func TestManualPages(t *testing.T) {
	c := startCorpus(t, rt)
	// Each page once, the schemes alternating (both are held to every page in BenchmarkRealWeb):
	// a long Sphinx page takes seconds to prove.
	for i, path := range realweb.ManualPages() {
		scheme := schemes[i%len(schemes)]
		t.Run(scheme+path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			p, err := c.browser.Open(ctx, c.origins()[scheme]+path)
			if ce, ok := errors.AsType[*bridge.CredentialError](err); ok {
				t.Fatalf("refused as a sign-in page: %s", ce.Field)
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			// Sphinx heads a page with an h1 whose text is the title less " — Python 3.11.2
			// documentation"; DocBook with an h2 whose text is the title.
			head := p.Heading
			if head == "" {
				head = p.Title
				if i := strings.LastIndex(head, " — "); i > 0 {
					head = head[:i]
				}
			}
			if head == "" {
				t.Fatalf("the page has no heading nor title (title %q)", p.Title)
			}
			// A first chunk with no text must say why: the page's text is still to be proven
			// (pending in the account, more to read), never an empty page in silence.
			if strings.TrimSpace(p.Text) == "" && (!p.More || p.Account.Pending == 0) && p.WithheldNote() == "" {
				t.Errorf("open handed out no text and said nothing: more %v, account %+v", p.More, p.Account)
			}
			// The heading reaches the model in the reads a model makes from the top: the first
			// chunk, or the next ones while the first is still being proven. Reading stops at the
			// heading, at the page's end, or when the reads run out of time (a loaded machine: the
			// page's text is still pending then, said so, and the test logs it; speed is a
			// benchmark's figure, not a test's).
			text, next, more, reads := p.Text, p.Next, p.More, 0
			for ; more && !strings.Contains(text, head) && ctx.Err() == nil; reads++ {
				ch, err := c.browser.Read(ctx, next)
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					t.Fatalf("read: %v", err)
				}
				text += ch.Text
				next, more = ch.Next, ch.More
			}
			switch {
			case strings.Contains(text, head) && reads > 0:
				t.Logf("the heading came in read %d: open's first chunk held %d bytes (account %+v); issue 39's target is the first", reads+1, len(p.Text), p.Account)
			case strings.Contains(text, head):
			case more:
				t.Logf("the heading %q had not come when the reads ran out of time (%d reads; the page's text still pending, said so)", head, reads+1)
			default:
				t.Errorf("the page's heading %q is not in its text read to the end (title %q, %d runs withheld, account %+v, note %q):\n%.500s",
					head, p.Title, p.Withheld, p.Account, p.WithheldNote(), text)
			}
		})
	}
}

// BenchmarkRealWeb reads the whole corpus over http and https in one guarded browser, each page to
// its end as a model that reads every chunk would, and reports: the share of pages that open (no
// credential refusal, no error) and whose text arrives (a library page's marker; any text for a
// manual page), the share of the pages' innerText lines (as an unguarded Chromium renders each
// page; those only form fields hold counted apart, since a field's value is never read) found in
// what the model got, and the passages withheld, by reason. Each page's figures
// go to the log; BENCHMARKS.md quotes them. It takes minutes: go test -run '^$' -bench RealWeb
// -benchtime 1x ./tests/realweb/ ($REALWEB_PAGES=/python/: only the paths that hold it;
// $REALWEB_SCHEMES=http: one scheme).
func BenchmarkRealWeb(b *testing.B) {
	c := startCorpus(b, rt)
	pp := plainPage(b)
	type page struct{ path, marker string }
	var pages []page
	for _, n := range realweb.LibraryPages(b) {
		pages = append(pages, page{"/pages/" + n + ".html", "RW-" + n + "-ok"})
	}
	for _, p := range realweb.ManualPages() {
		pages = append(pages, page{p, ""})
	}
	// REALWEB_PAGES=/python/ reads only the pages whose path holds it (several: a,b,...);
	// REALWEB_SCHEMES=http reads over that scheme only.
	if only := os.Getenv("REALWEB_PAGES"); only != "" {
		pages = slices.DeleteFunc(pages, func(p page) bool {
			return !slices.ContainsFunc(strings.Split(only, ","), func(o string) bool { return strings.Contains(p.path, o) })
		})
	}
	schemes := schemes
	if only := os.Getenv("REALWEB_SCHEMES"); only != "" {
		schemes = strings.Split(only, ",")
		for _, sc := range schemes {
			if !slices.Contains([]string{"http", "https"}, sc) {
				b.Fatalf("REALWEB_SCHEMES: %q is not http or https", sc)
			}
		}
	}
	// What a person reads, once per page (the same files over both schemes), the text only
	// fields hold apart.
	lines, fields := map[string][]string{}, map[string]map[string]bool{}
	for _, p := range pages {
		all, f := plainLines(b, pp, c.plain.URL+p.path)
		fields[p.path] = f
		for _, l := range all {
			if !f[l] {
				lines[p.path] = append(lines[p.path], l)
			}
		}
	}
	for b.Loop() {
		var opened, read, total, wantLines, gotLines, libLines, libGot, manLines, manGot, fieldLines int
		refused, failed, withheld := map[string]int{}, map[string]int{}, map[string]int{}
		for _, scheme := range schemes {
			for _, p := range pages {
				total++
				r := c.read(c.origins()[scheme] + p.path)
				found, missing := lineShare(lines[p.path], r.Text)
				wantLines += len(lines[p.path])
				gotLines += found
				fieldLines += len(fields[p.path])
				if p.marker != "" {
					libLines, libGot = libLines+len(lines[p.path]), libGot+found
				} else {
					manLines, manGot = manLines+len(lines[p.path]), manGot+found
				}
				switch {
				case r.Credential != "":
					refused[r.Credential]++
				case r.Err != nil:
					failed[firstWords(r.Err.Error())]++
				default:
					opened++
					if p.marker == "" && r.Text != "" || p.marker != "" && strings.Contains(r.Text, p.marker) {
						read++
					}
				}
				if r.Withheld > 0 {
					withheld[r.Unproven] += r.Withheld
				}
				b.Logf("%s%s: %d of %d lines (%.1f %%), %d runs withheld, %.1f s%s%s", scheme, p.path, found, len(lines[p.path]),
					100*float64(found)/float64(max(len(lines[p.path]), 1)), r.Withheld, r.Took.Seconds(), note(r), sample(missing))
			}
		}
		b.ReportMetric(100*float64(opened)/float64(total), "open%")
		b.ReportMetric(100*float64(read)/float64(total), "read%")
		b.ReportMetric(100*float64(gotLines)/float64(max(wantLines, 1)), "lines%")
		b.ReportMetric(100*float64(libGot)/float64(max(libLines, 1)), "liblines%")
		b.ReportMetric(100*float64(manGot)/float64(max(manLines, 1)), "manuallines%")
		b.Logf("pages %d: opened %d, text arrived %d; lines %d of %d (libraries %d of %d, manuals %d of %d); lines only fields hold (never read, by design): %d",
			total, opened, read, gotLines, wantLines, libGot, libLines, manGot, manLines, fieldLines)
		for _, k := range sortedKeys(refused) {
			b.Logf("refused as sign-in pages, %s: %d", k, refused[k])
		}
		for _, k := range sortedKeys(failed) {
			b.Logf("failed, %s: %d", k, failed[k])
		}
		for _, k := range sortedKeys(withheld) {
			b.Logf("text runs withheld, %s: %d", k, withheld[k])
		}
	}
}

// note says how a reading ended when it did not open.
func note(r reading) string {
	switch {
	case r.Credential != "":
		return "; refused: " + r.Credential
	case r.Err != nil:
		return "; failed: " + r.Err.Error()
	}
	return ""
}

// sample is up to three missing lines, cut short.
func sample(missing []string) string {
	if len(missing) == 0 {
		return ""
	}
	var out []string
	for _, m := range missing[:min(3, len(missing))] {
		out = append(out, fmt.Sprintf("%.60q", m))
	}
	return "; missing e.g. " + strings.Join(out, ", ")
}

// firstWords is an error's text without the URLs and numbers that make each one different.
func firstWords(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
