package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// staticPages are PostgreSQL manual pages (Debian's postgresql-doc-15): long pages no script
// changes while they are read.
var staticPages = []string{"datatype-datetime.html", "functions-string.html"}

// BenchmarkStaticLongPage is the read of a static long page, through the bridge's public API
// only (Launch, Open, Read to the end), one session per page: what the change watch of issue 46
// (js/reader/25_changes.js) must not slow down. The bridge has no switch to turn the watch off, so
// the ratio is of the commits before and after it, this file copied into a worktree of each
// (BENCHMARKS.md gives the commands):
//
//	go test ./bench -run '^$' -bench StaticLongPage -benchtime 3x -count 1
//
// open-ms is Open (the first chunk), whole-ms the page read to its end.
func BenchmarkStaticLongPage(b *testing.B) {
	man := testutil.ManualByName(b, "postgresql")
	site, _, _ := testutil.ServeDir(b, man.Dir)
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/\", \"/*\"]\n", site.URL)), "static long pages")
	if err != nil {
		b.Fatal(err)
	}
	rt, err := bridge.NewRuntime(bridge.WithDriverDir(testbrowser.DriverDir()))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	for _, page := range staticPages {
		b.Run(page, func(b *testing.B) {
			ctx := context.Background()
			lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			s, err := rt.Launch(lctx, pol)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var open, whole time.Duration
			chars, withheld := 0, 0
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := s.Open(ctx, site.URL+"/"+page); err != nil {
					b.Fatal(err)
				}
				open += time.Since(start)
				for off := 0; ; {
					c, err := s.Read(ctx, off)
					if err != nil {
						b.Fatal(err)
					}
					chars += len(c.Text)
					if !c.More {
						withheld += c.Withheld
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
			b.ReportMetric(float64(chars)/float64(b.N), "chars")
			b.ReportMetric(float64(withheld)/float64(b.N), "withheld")
		})
	}
}
