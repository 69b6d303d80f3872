package bridge

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// BenchmarkGuardedVsUnguarded times, on the same page, a guarded navigation plus read (Open, which
// fetches every hop itself, scans every frame for credential fields and reads in isolated worlds,
// then Read) against an unguarded Goto plus InnerText, and reports both and their ratio.
// The default settle (after load, until the route has been quiet for 30 ms, at most 150 ms) is part
// of the difference; the settle=0 run shows the cost of the guards alone.
func BenchmarkGuardedVsUnguarded(b *testing.B) {
	b.Run("settle=default", func(b *testing.B) { benchGuarded(b) })
	b.Run("settle=0", func(b *testing.B) { benchGuarded(b, WithSettle(0)) })
}

func benchGuarded(b *testing.B, opts ...Option) {
	s := newSession(b, opts...)
	page := plainPage(b)
	url := testFix.Site + "/p/" + newKey() + "/basic.html"
	ctx := context.Background()
	guarded := func() {
		if _, err := s.Open(ctx, url); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
	unguarded := func() {
		if _, err := page.Goto(url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			b.Fatal(err)
		}
		if _, err := page.InnerText("body"); err != nil {
			b.Fatal(err)
		}
	}
	guarded() // warm both up
	unguarded()
	var tg, tu time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		guarded()
		tg += time.Since(start)
		start = time.Now()
		unguarded()
		tu += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tg.Nanoseconds())/n, "guarded-ns/op")
	b.ReportMetric(float64(tu.Nanoseconds())/n, "unguarded-ns/op")
	b.ReportMetric(float64(tg)/float64(tu), "guarded/unguarded")
}

// BenchmarkReadVisibility times Open plus Read, with visibility decided by rendering (the default)
// and by the paint heuristics alone, on the demo site's record page and on a long page (1500
// paragraphs, about 50 000 px tall: shot in bands of pixels.MaxBandH). Report the medians of
// -count runs.
func BenchmarkReadVisibility(b *testing.B) {
	ctx := context.Background()
	demoURL, demoPol := demoSite(b)
	noPixels := func(c *config) { c.pixels = false }
	for _, pg := range []struct {
		name, url string
		pol       *policy.Policy
	}{
		{"record", demoURL + "/records/SYN-0042", demoPol},
		{"long", testFix.Site + "/big/" + newKey() + "?lines=1500", testFix.pol},
	} {
		for _, mode := range []struct {
			name string
			opts []Option
		}{{"pixels", nil}, {"styles", []Option{noPixels}}} {
			b.Run(pg.name+"/"+mode.name, func(b *testing.B) {
				lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				s, err := testRT.Launch(lctx, pg.pol, mode.opts...)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				withheld := 0
				read := func() {
					p, err := s.Open(ctx, pg.url)
					if err != nil {
						b.Fatal(err)
					}
					withheld = max(withheld, p.Withheld)
					if _, err := s.Read(ctx, 0); err != nil {
						b.Fatal(err)
					}
				}
				read()
				b.ResetTimer()
				for range b.N {
					read()
				}
				// Text runs not proven visible (the pixel phase out of time): must be 0 for the
				// time to mean a whole read.
				b.ReportMetric(float64(withheld), "withheld")
			})
		}
	}
}

// BenchmarkOpenPhases breaks a guarded Open of the demo site's record page, followed by Links and
// Fields as the lookup preset makes them, into its phases (config.phase): the time per Open of
// each, in ms, besides the whole Open and the plain Goto (to the load event) plus InnerText of
// the same page in the same iterations. Phases nest: "read" holds "view", "quiet" (the waits and
// watch drains before and after the reads), "pixels" (which holds "shot" and the "eval:layout" /
// "eval:paint" evaluations) and "eval:read";
// "recheck" (the credential re-check before Links and Fields) holds a "view", a "quiet" and an
// "eval:check". It is the breakdown of BENCHMARKS.md's guarded Open per phase, reproducible:
//
//	go test ./bridge -run '^$' -bench OpenPhases -benchtime 20x -count 3
//
// proof=two is the default proof (two frames where the page allows), proof=four the four-frame
// proof of every read (the proof before issue 25), for comparison.
func BenchmarkOpenPhases(b *testing.B) {
	b.Run("proof=two", func(b *testing.B) { benchOpenPhases(b) })
	b.Run("proof=four", func(b *testing.B) { benchOpenPhases(b, func(c *config) { c.fourFrames = true }) })
}

func benchOpenPhases(b *testing.B, opts ...Option) {
	ctx := context.Background()
	demoURL, pol := demoSite(b)
	sums := map[string]time.Duration{}
	on := false
	timer := func(c *config) {
		c.phase = func(name string, d time.Duration) {
			if on {
				sums[name] += d
			}
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	s, err := testRT.Launch(lctx, pol, append(opts, timer)...)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	page := plainPage(b)
	url := demoURL + "/records/SYN-0042"
	var open, plainT time.Duration
	run := func() {
		start := time.Now()
		p, err := s.Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		if p.Withheld > 0 {
			b.Fatalf("%d runs withheld: the read was not whole (%s)", p.Withheld, p.Unproven)
		}
		open += time.Since(start)
		if _, err := s.Links(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Fields(ctx); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if _, err := page.Goto(url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			b.Fatal(err)
		}
		if _, err := page.InnerText("body"); err != nil {
			b.Fatal(err)
		}
		plainT += time.Since(start)
	}
	run() // warm up
	clear(sums)
	open, plainT = 0, 0
	on = true
	b.ResetTimer()
	for range b.N {
		run()
	}
	b.StopTimer()
	on = false
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(open), "open-ms")
	b.ReportMetric(per(plainT), "plain-ms")
	for name, d := range sums {
		b.ReportMetric(per(d), name+"-ms")
	}
}

// demoSite starts the demo site (seed 1, the default records) for the length of b and returns
// its origin and its policy.
func demoSite(b *testing.B) (string, *policy.Policy) {
	b.Helper()
	srv, err := demosite.Start(context.Background(), "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	pol, err := policy.Parse(demosite.PolicyYAML(srv.URL), "demo-site policy")
	if err != nil {
		b.Fatal(err)
	}
	return srv.URL, pol
}

// manualSite serves a manual's pages (testutil.ManualByName) over http for the length of b, with
// a policy that reads them styled, as a person sees them.
func manualSite(b *testing.B, manual string) (string, *policy.Policy) {
	b.Helper()
	man := testutil.ManualByName(b, manual)
	site, _, _ := testutil.ServeDir(b, man.Dir)
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/\", \"/*\", \"/_static/*?{version}\"]\n", site.URL)), "long pages")
	if err != nil {
		b.Fatal(err)
	}
	return site.URL, pol
}

// benchPage is a manual's page: the manual's name (testutil.ManualByName) and the page's path.
type benchPage struct{ manual, path string }

// benchPages is defaults, or the pages BRIDGE_BENCH_PAGES=manual:path,... names.
func benchPages(b *testing.B, defaults []benchPage) []benchPage {
	env := os.Getenv("BRIDGE_BENCH_PAGES")
	if env == "" {
		return defaults
	}
	var pages []benchPage
	for _, mp := range strings.Split(env, ",") {
		m, p, ok := strings.Cut(mp, ":")
		if !ok {
			b.Fatalf("BRIDGE_BENCH_PAGES: %q is not manual:path", mp)
		}
		pages = append(pages, benchPage{m, p})
	}
	return pages
}

// BenchmarkLongPagePhases is where the time of a long page goes (issue 39): real manual pages
// (Debian's postgresql-doc-15 and python3.11-doc), each opened and then read chunk by chunk to
// its end, with the phases of Open and of the reads summed (as BenchmarkOpenPhases):
//
//	go test ./bridge -run '^$' -bench LongPagePhases -benchtime 1x -count 1
//
// open-ms is Open (its first chunk), whole-ms the whole page read back to back, chunks the reads
// after Open.
func BenchmarkLongPagePhases(b *testing.B) {
	pages := benchPages(b, []benchPage{
		{"postgresql", "datatype-datetime.html"},
		{"postgresql", "functions-string.html"},
		{"postgresql", "sql-select.html"},
		{"python", "library/re.html"},
		{"python", "library/functions.html"},
	})
	for _, prove := range []string{"chunk", "page"} {
		for _, pg := range pages {
			b.Run("prove="+prove+"/"+pg.manual+"/"+pg.path, func(b *testing.B) { benchLongPage(b, pg.manual, pg.path, prove == "page") })
		}
	}
}

// benchLongPage opens one manual page and reads it to its end; proveWhole makes each read
// prove the whole page (the reads before issue 39).
func benchLongPage(b *testing.B, manual, path string, proveWhole bool) {
	site, pol := manualSite(b, manual)
	// sums: every phase, summed; opens: those of Open alone (its first chunk). The read ahead
	// adds to sums from its own goroutine.
	var mu sync.Mutex
	sums, opens := map[string]time.Duration{}, map[string]time.Duration{}
	inOpen := false
	timer := func(c *config) {
		c.phase = func(name string, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			sums[name] += d
			if inOpen {
				opens[name] += d
			}
		}
	}
	ctx := context.Background()
	lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	opts := []Option{timer, func(c *config) { c.proveWhole = proveWhole }}
	if os.Getenv("BRIDGE_BENCH_LOG") != "" {
		opts = append(opts, WithLogf(func(f string, a ...any) { b.Logf(f, a...) }))
	}
	s, err := testRT.Launch(lctx, pol, opts...)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var open, whole time.Duration
	chunks, chars := 0, 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		mu.Lock()
		inOpen = true
		mu.Unlock()
		_, err := s.Open(ctx, site+"/"+path)
		mu.Lock()
		inOpen = false
		mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		open += time.Since(start)
		for off := 0; ; {
			c, err := s.Read(ctx, off)
			if err != nil {
				b.Fatal(err)
			}
			chunks++
			chars += len(c.Text)
			if !c.More {
				if c.Withheld > 0 {
					b.Logf("%s: %d withheld: %s", path, c.Withheld, c.WithheldNote())
				}
				break
			}
			off = c.Next
		}
		whole += time.Since(start)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(open), "open-ms")
	b.ReportMetric(per(whole), "whole-ms")
	b.ReportMetric(float64(chunks)/float64(b.N), "chunks")
	b.ReportMetric(float64(chars)/float64(b.N), "chars")
	mu.Lock()
	defer mu.Unlock()
	for name, d := range sums {
		b.ReportMetric(per(d), name+"-ms")
	}
	// What Open's first chunk cost, by phase: "open:shot" is the two-frame proof's captures of
	// the band that holds it, the floor of any read that proves its text by rendering.
	for name, d := range opens {
		b.ReportMetric(per(d), "open:"+name+"-ms")
	}
}

// BenchmarkReadAhead reads a long manual page to its end as a model does, thinking between reads
// (300 ms, 2 s), with the session's read ahead off and on: the time of each later read, the mean
// and the longest. BRIDGE_BENCH_PAGES=manual:path,... chooses the pages (PostgreSQL's SELECT
// page by default).
func BenchmarkReadAhead(b *testing.B) {
	pages := benchPages(b, []benchPage{{"postgresql", "sql-select.html"}})
	for _, pg := range pages {
		site, pol := manualSite(b, pg.manual)
		for _, think := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
			for _, ahead := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/think=%s/ahead=%v", pg.path, think, ahead), func(b *testing.B) {
					ctx := context.Background()
					lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
					s, err := testRT.Launch(lctx, pol, WithReadAhead(ahead))
					cancel()
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					var later, longest time.Duration
					reads := 0
					b.ResetTimer()
					for range b.N {
						p, err := s.Open(ctx, site+"/"+pg.path)
						if err != nil {
							b.Fatal(err)
						}
						for off, more := p.Next, p.More; more; {
							time.Sleep(think)
							start := time.Now()
							c, err := s.Read(ctx, off)
							if err != nil {
								b.Fatal(err)
							}
							d := time.Since(start)
							later += d
							longest = max(longest, d)
							reads++
							off, more = c.Next, c.More
						}
					}
					b.StopTimer()
					if reads > 0 {
						b.ReportMetric(float64(later.Milliseconds())/float64(reads), "later-ms-mean")
						b.ReportMetric(float64(longest.Milliseconds()), "later-ms-max")
						b.ReportMetric(float64(reads)/float64(b.N), "later-reads")
					}
				})
			}
		}
	}
}

// BenchmarkCapture is what one capture (Page.captureScreenshot beyond the viewport, PNG, decoded)
// of a band of PostgreSQL's SELECT page costs by its size: the proof's unit of cost. Two of them
// (A and D) of the band that holds a chunk are the floor of any read that proves its text by
// rendering (issue 39).
//
//	go test ./bridge -run '^$' -bench Capture -benchtime 5x
func BenchmarkCapture(b *testing.B) {
	site, pol := manualSite(b, "postgresql")
	ctx := context.Background()
	s, err := testRT.Launch(ctx, pol)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Open(ctx, site+"/sql-select.html"); err != nil {
		b.Fatal(err)
	}
	v, err := s.read.view(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer v.close()
	t := v.owner[v.mainID]
	for _, wh := range [][2]float64{{48, 4000}, {320, 4000}, {1265, 1000}, {1265, 4000}, {1265, 8000}} {
		b.Run(fmt.Sprintf("%.0fx%.0f", wh[0], wh[1]), func(b *testing.B) {
			for range b.N {
				if _, err := shoot(ctx, t, 6, 9, wh[0], wh[1]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(wh[0]*wh[1]/1e6, "Mpx")
		})
	}
}
