package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mxschmitt/playwright-go"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
)

// BenchmarkMCP times browser-agent mcp (the real binary over stdio, driven by the Go SDK's
// client) against the same reads made with plain playwright-go and, when it is installed (npm ci
// in bench/playwright-mcp), against Playwright MCP's own server (@playwright/mcp, stdio, headless,
// the same Chromium):
//
//   - first-ms: the first tool call of a fresh session, on the search page of the lookup preset
//     (browser-agent: search_site, which starts the driver, egress proxy, Chromium and bridge;
//     Playwright MCP: browser_navigate, which starts its browser; plain: playwright.Run, Launch,
//     NewPage, Goto, InnerText);
//   - warm-ms: then, in the same session, open_url + read_page of the lookup's three pages in turn
//     (search, record, registry B; Playwright MCP: browser_navigate + browser_snapshot; plain:
//     Goto + InnerText), the median of 10.
//
// Each iteration runs the three sides one after the other, so that they share the machine's load.
func BenchmarkMCP(b *testing.B) {
	site := lookupSite(b)
	dir := b.TempDir()
	bin := agentBinary(b)
	// The demo policy with room for the warm loop's steps.
	pol := strings.Replace(string(demosite.PolicyYAML(site.URL)), "max_steps: 20", "max_steps: 200", 1)
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte(pol), 0o600); err != nil {
		b.Fatal(err)
	}
	pwMCP := playwrightMCP()
	if pwMCP == "" {
		b.Logf("Playwright MCP not installed (cd bench/playwright-mcp && npm ci --ignore-scripts): timing plain playwright-go only")
	}
	// The lookup preset's three pages: the search, the record, the second registry's entry.
	const id = "SYN-0042"
	urls := []string{site.URL + "/search?q=" + id, site.URL + "/records/" + id, site.URL + "/sources/b/" + id}
	const warm = 10
	var first, warmMed [3][]float64 // browser-agent, plain, playwright-mcp
	// browser-agent's open_url opens only what the session was presented or the policy's routes
	// filled with the session's record: its session starts with the search (timed as the first call).
	search := [][2]string{{"search_site", `{"query":"` + id + `"}`}}
	for i := 0; i < b.N; i++ {
		f, w := mcpSide(b, bin, "browser-agent", []string{"mcp", "--policy", polFile, "--db", filepath.Join(dir, fmt.Sprintf("a%d.db", i))}, urls, warm, search,
			func(u string) (string, string) { return "open_url", `{"url":"` + u + `"}` }, "read_page", `{}`)
		first[0], warmMed[0] = append(first[0], f), append(warmMed[0], w)
		f, w = plainSide(b, urls, warm)
		first[1], warmMed[1] = append(first[1], f), append(warmMed[1], w)
		if pwMCP != "" {
			f, w = mcpSide(b, "node", "playwright-mcp", []string{pwMCP, "--headless", "--isolated", "--executable-path", testbrowser.Chromium(), "--no-sandbox"}, urls, warm, nil,
				func(u string) (string, string) { return "browser_navigate", `{"url":"` + u + `"}` }, "browser_snapshot", `{}`)
			first[2], warmMed[2] = append(first[2], f), append(warmMed[2], w)
		}
	}
	b.ReportMetric(medianF(first[0]), "mcp-first-ms")
	b.ReportMetric(medianF(warmMed[0]), "mcp-warm-ms")
	b.ReportMetric(medianF(first[1]), "plain-first-ms")
	b.ReportMetric(medianF(warmMed[1]), "plain-warm-ms")
	if pwMCP != "" {
		b.ReportMetric(medianF(first[2]), "pwmcp-first-ms")
		b.ReportMetric(medianF(warmMed[2]), "pwmcp-warm-ms")
	}
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func msF(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mcpSide starts an MCP server process, times the first call (prime[0], or the open of urls[0]
// when prime is empty), makes the other prime calls untimed, then times warm open+read pairs.
func mcpSide(b *testing.B, cmdName, label string, args []string, urls []string, warm int, prime [][2]string, open func(string) (string, string), readTool, readArgs string) (float64, float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(cmdName, args...)
	cmd.Dir = b.TempDir() // Playwright MCP writes its output folder here
	cmd.Env = append(os.Environ(), "BROWSER_AGENT_DRIVER_DIR="+testbrowser.DriverDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("%s: connect: %v\n%s", label, err, stderr.String())
	}
	defer cs.Close()
	callTool := func(name, args string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil || res.IsError {
			txt := ""
			if res != nil && len(res.Content) > 0 {
				if t, ok := res.Content[0].(*mcp.TextContent); ok {
					txt = t.Text
				}
			}
			b.Fatalf("%s: %s %s: %v %.300s\n%s", label, name, args, err, txt, stderr.String())
		}
	}
	if len(prime) == 0 {
		name, args := open(urls[0])
		prime = [][2]string{{name, args}}
	}
	start := time.Now()
	callTool(prime[0][0], prime[0][1])
	first := msF(time.Since(start))
	for _, c := range prime[1:] {
		callTool(c[0], c[1])
	}
	var ws []float64
	for i := 0; i < warm; i++ {
		start := time.Now()
		callTool(open(urls[i%len(urls)]))
		callTool(readTool, readArgs)
		ws = append(ws, msF(time.Since(start)))
	}
	return first, medianF(ws)
}

// plainSide is the same with plain playwright-go: no policy, proxy or checks.
func plainSide(b *testing.B, urls []string, warm int) (float64, float64) {
	start := time.Now()
	page, stop := plainPage(b, playwright.BrowserTypeLaunchOptions{Args: []string{"--no-sandbox"}, ChromiumSandbox: playwright.Bool(false)})
	defer stop()
	step := func(u string) {
		if _, err := page.Goto(u, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			b.Fatal(err)
		}
		if _, err := page.InnerText("body"); err != nil {
			b.Fatal(err)
		}
	}
	step(urls[0])
	first := msF(time.Since(start))
	var ws []float64
	for i := 0; i < warm; i++ {
		start := time.Now()
		step(urls[i%len(urls)])
		ws = append(ws, msF(time.Since(start)))
	}
	return first, medianF(ws)
}
