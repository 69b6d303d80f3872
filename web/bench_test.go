package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// coldLaunch is what serve did before the pool: a new driver, egress proxy and Chromium per run.
func coldLaunch(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	g, err := guarded.Launch(ctx, pol)
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}

// BenchmarkServeRun times a visitor's lookup through serve's API, from POST /api/runs to the first
// step event and to the result event on the run's stream: cold (a driver, proxy and Chromium
// started per run) and warm (the pool: one driver, the next browser started in advance; each
// iteration starts once the pool has it ready, as for a visitor arriving after the last run). It
// reports the medians in ms.
//
//	go test ./web -run '^$' -bench ServeRun -benchtime 10x -timeout 30m
func BenchmarkServeRun(b *testing.B) {
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			var l *launches
			opts := []Option{withDemo(), WithModel("offline", offlineModel), WithLedger(newLedger()), WithLimits(Limits{PerVisitor: 1 << 20})}
			if mode == "cold" {
				l = newLaunches(coldLaunch)
				opts = append(opts, WithLauncher(l.Launch))
			} else {
				l = newLaunches(guardedLaunch)
				opts = append(opts, WithLauncher(l.Launch), WithPrewarm(true))
			}
			s, err := New(testPol, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ts := newHTTPServer(s)
			defer ts.Close()
			var first, result []float64
			for i := 0; i < b.N; i++ {
				if mode == "warm" && !testutil.Eventually(2*time.Minute, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.n >= i+1 }) {
					b.Fatal("the pool did not get a browser ready")
				}
				f, r := timeRun(b, ts)
				first, result = append(first, f), append(result, r)
			}
			b.ReportMetric(median(first), "ms-first-step")
			b.ReportMetric(median(result), "ms-result")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// timeRun starts a lookup and returns the ms from POST to its first step event and to its result.
func timeRun(b *testing.B, ts *testServer) (float64, float64) {
	start := time.Now()
	res, err := http.Post(ts.URL+"/api/runs", "application/json", strings.NewReader(`{"preset":"lookup"}`))
	if err != nil {
		b.Fatal(err)
	}
	var c CreatedJSON
	decodeJSON(res.Body, &c)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted || c.Recorded != nil {
		b.Fatalf("POST: %d, recorded %+v", res.StatusCode, c.Recorded)
	}
	ev, err := http.Get(ts.URL + c.Events)
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Body.Close()
	var first float64
	sc := bufio.NewScanner(ev.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		switch sc.Text() {
		case "event: " + EventStep:
			if first == 0 {
				first = float64(time.Since(start).Microseconds()) / 1000
			}
		case "event: " + EventResult:
			return first, float64(time.Since(start).Microseconds()) / 1000
		}
	}
	b.Fatal("the stream ended without a result")
	return 0, 0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type testServer = httptest.Server

func newHTTPServer(h http.Handler) *testServer { return httptest.NewServer(h) }

func decodeJSON(r io.Reader, v any) { json.NewDecoder(r).Decode(v) }
