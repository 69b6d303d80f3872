package mcpguard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// benchPage is an ordinary page of some length: headings, paragraphs, links and a form field.
func benchPage() string {
	var b strings.Builder
	b.WriteString("<!doctype html><title>bench</title><h1>Manual</h1><label>Search <input name=q></label>")
	for i := range 40 {
		fmt.Fprintf(&b, "<h2>Section %d</h2><p>Paragraph %d of the manual, with <a href=/p%d>a link</a> and some words to read.</p>", i, i, i)
	}
	return b.String()
}

// BenchmarkGuardCost is the guard's added cost against Playwright MCP alone, on the same page:
// start-up (the server up, its tools listed, the first page opened) and one call each of
// browser_navigate to the page and browser_snapshot, for Playwright MCP alone, the guard with the
// wall off (Playwright MCP launches its browser) and the guard walled (it launches the browser in
// a namespace and Playwright MCP attaches over CDP).
func BenchmarkGuardCost(b *testing.B) {
	page := benchPage()
	benchCost(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}), "/")
}

// BenchmarkGuardCostManual is BenchmarkGuardCost on a long real page: PostgreSQL's manual page
// of SELECT (Debian's postgresql-doc-15: about 2,000 snapshot texts), with its stylesheet.
func BenchmarkGuardCostManual(b *testing.B) {
	m := testutil.ManualByName(b, "postgresql")
	benchCost(b, http.FileServer(http.Dir(m.Dir)), "/sql-select.html")
}

// benchCost measures the guard's added cost on the page h serves at path.
func benchCost(b *testing.B, h http.Handler, path string) {
	cli := playwrightMCP(b)
	srv := httptest.NewServer(h)
	defer srv.Close()
	pol, err := policy.Parse(fmt.Appendf(nil, "version: 1\nsites:\n  - origin: %s\n    read: [/, /*, /favicon.ico]\n", srv.URL), "bench")
	if err != nil {
		b.Fatal(err)
	}
	upstream := []string{"node", cli, "--headless", "--isolated", "--executable-path", testbrowser.Chromium(), "--no-sandbox"}
	start := map[string]func(b *testing.B) (*mcp.ClientSession, func()){
		"alone": func(b *testing.B) (*mcp.ClientSession, func()) {
			cmd := exec.Command(upstream[0], upstream[1:]...)
			cmd.Dir = b.TempDir()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			return cs, func() { cs.Close() }
		},
	}
	for _, mode := range []policy.WallMode{policy.WallOff, policy.WallRequired} {
		start["guard-wall-"+string(mode)] = func(b *testing.B) (*mcp.ClientSession, func()) {
			g, err := Start(context.Background(), Config{Policy: pol, Command: upstream, Wall: mode, Stderr: &testutil.Buffer{}})
			if err != nil {
				b.Fatal(err)
			}
			ct, st := mcp.NewInMemoryTransports()
			if _, err := g.Server().Connect(context.Background(), st, nil); err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			return cs, func() { cs.Close(); g.Close() }
		}
	}
	call := func(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) {
		if args == nil {
			args = map[string]any{}
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			b.Fatalf("%s: %s", name, resultText(res))
		}
	}
	// Each iteration starts all three, in an order that rotates, so that they share the machine's
	// load (a 2-core machine shared with other suites): start, then three navigate+snapshot pairs.
	names := []string{"alone", "guard-wall-off", "guard-wall-required"}
	sums := map[string]*[3]time.Duration{} // start, navigate, snapshot
	for _, n := range names {
		sums[n] = &[3]time.Duration{}
	}
	const calls = 3
	i := 0
	for b.Loop() {
		for k := range names {
			name := names[(i+k)%len(names)]
			t0 := time.Now()
			cs, stop := start[name](b)
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			call(b, cs, "browser_navigate", map[string]any{"url": srv.URL + path})
			sums[name][0] += time.Since(t0)
			for range calls {
				t1 := time.Now()
				call(b, cs, "browser_navigate", map[string]any{"url": srv.URL + path})
				t2 := time.Now()
				call(b, cs, "browser_snapshot", nil)
				sums[name][1] += t2.Sub(t1)
				sums[name][2] += time.Since(t2)
			}
			stop()
		}
		i++
	}
	for _, n := range names {
		ms := func(d time.Duration, per int) float64 { return float64(d.Microseconds()) / 1000 / float64(per) }
		b.ReportMetric(ms(sums[n][0], b.N), n+"-start-ms")
		b.ReportMetric(ms(sums[n][1], b.N*calls), n+"-navigate-ms")
		b.ReportMetric(ms(sums[n][2], b.N*calls), n+"-snapshot-ms")
	}
	b.ReportMetric(0, "ns/op")
}
