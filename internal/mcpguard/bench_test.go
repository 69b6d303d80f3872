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

	"github.com/browser-agent/browser-agent/internal/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testutil"
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
// start-up (the server up, its tools listed, the first page opened) and one call
// (browser_navigate to the page, then browser_snapshot), for Playwright MCP alone, the guard with
// the wall off (Playwright MCP launches its browser) and the guard walled (it launches the
// browser in a namespace and Playwright MCP attaches over CDP).
func BenchmarkGuardCost(b *testing.B) {
	cli := playwrightMCP(b)
	page := benchPage()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	pol, err := policy.Parse(fmt.Appendf(nil, "version: 1\nsites:\n  - origin: %s\n    read: [/, /favicon.ico]\n", srv.URL), "bench")
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
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", name, err, resultText(res))
		}
	}
	for _, name := range []string{"alone", "guard-wall-off", "guard-wall-required"} {
		b.Run(name+"/start", func(b *testing.B) {
			for b.Loop() {
				cs, stop := start[name](b)
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				call(b, cs, "browser_navigate", map[string]any{"url": srv.URL + "/"})
				b.StopTimer()
				stop()
				b.StartTimer()
			}
		})
		b.Run(name+"/call", func(b *testing.B) {
			cs, stop := start[name](b)
			defer stop()
			call(b, cs, "browser_navigate", map[string]any{"url": srv.URL + "/"})
			var nav, snap time.Duration
			for b.Loop() {
				t0 := time.Now()
				call(b, cs, "browser_navigate", map[string]any{"url": srv.URL + "/"})
				t1 := time.Now()
				call(b, cs, "browser_snapshot", nil)
				nav, snap = nav+t1.Sub(t0), snap+time.Since(t1)
			}
			b.ReportMetric(float64(nav.Milliseconds())/float64(b.N), "navigate-ms")
			b.ReportMetric(float64(snap.Milliseconds())/float64(b.N), "snapshot-ms")
		})
	}
}
