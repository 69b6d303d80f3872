package bridge

import (
	"context"
	"testing"
	"time"

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
	bctx, err := plain.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	defer bctx.Close()
	page, err := bctx.NewPage()
	if err != nil {
		b.Fatal(err)
	}
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
