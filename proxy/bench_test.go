package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkAddedLatency measures what the proxy adds to a request on loopback: it times at least
// 1000 GETs directly and 1000 through the proxy, interleaved, both over kept-alive connections,
// and reports the difference of the medians and of the 99th percentiles.
//
//	go test ./proxy -run '^$' -bench AddedLatency
func BenchmarkAddedLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	p := startProxy(b, testPolicy(b, &upstream{Server: up}, nil))
	user, pass := p.Credentials()
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL(p, user, pass))}}
	addedLatency(b, direct, proxied, up.URL+"/records/42?q=bench")
}

// BenchmarkAddedLatencyHTTPS is BenchmarkAddedLatency over https: through the proxy every request
// is read inside the intercepted tunnel (TLS from the client ends at the proxy), decided, and sent
// over the proxy's own verified TLS connection. Both clients keep their connections alive, so the
// handshakes are paid in the warm-up and the figures are per request.
//
//	go test ./proxy -run '^$' -bench AddedLatencyHTTPS
func BenchmarkAddedLatencyHTTPS(b *testing.B) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	tlsUp := &upstream{Server: up}
	plainUp := httptest.NewServer(http.NotFoundHandler())
	defer plainUp.Close()
	p := startProxy(b, mitmPolicy(b, &upstream{Server: plainUp}, tlsUp), WithUpstreamRoots(up.Certificate()))
	direct := up.Client()
	proxied := &http.Client{Transport: mitmTransport(p)}
	addedLatency(b, direct, proxied, up.URL+"/records/42?q=bench")
}

func addedLatency(b *testing.B, direct, proxied *http.Client, target string) {
	get := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(target)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d", target, resp.StatusCode)
		}
		return time.Since(start)
	}
	for range 100 { // warm up connections and code paths
		get(direct)
		get(proxied)
	}
	n := max(b.N, 1000)
	dd := make([]time.Duration, 0, n)
	pd := make([]time.Duration, 0, n)
	b.ResetTimer()
	for range n {
		dd = append(dd, get(direct))
		pd = append(pd, get(proxied))
	}
	b.StopTimer()
	slices.Sort(dd)
	slices.Sort(pd)
	pct := func(s []time.Duration, q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(pct(pd, 0.50)-pct(dd, 0.50)), "p50-added-µs")
	b.ReportMetric(us(pct(pd, 0.99)-pct(dd, 0.99)), "p99-added-µs")
	b.ReportMetric(us(pct(dd, 0.50)), "p50-direct-µs")
	b.ReportMetric(us(pct(pd, 0.50)), "p50-proxied-µs")
	b.ReportMetric(float64(n), "requests")
	var sum time.Duration
	for _, d := range pd {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(n), "ns/op") // mean proxied request
}
