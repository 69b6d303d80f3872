package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/policy"
)

// BenchmarkLookupTokens counts what the lookup (SYN-0042 on the demo site) costs a chat model:
// model turns and input tokens as billed, cumulative (each turn re-sends the system prompt, the
// tool specs and the whole conversation), counted with the same tokenizer and framing
// (coordinator.PromptTokens, o200k_base) for both sides:
//
//   - ours: browser-agent run --task "Look up SYN-0042" with the offline planner (the real binary,
//     guarded Chromium, egress proxy), its usage as it reports it;
//   - the peer: Playwright MCP (@playwright/mcp over stdio, headless, the same Chromium), driven as
//     an agent doing the same work would: three turns of browser_navigate + browser_snapshot
//     (search, record, registry B), then the same answer; its tool specs are the ones its
//     tools/list gives, the system prompt and task the same as ours.
//
// Needs bench/playwright-mcp installed (cd bench/playwright-mcp && npm ci --ignore-scripts) for the
// peer; without it only ours is counted.
func BenchmarkLookupTokens(b *testing.B) {
	site := lookupSite(b)
	dir := b.TempDir()
	bin := agentBinary(b)
	polYAML := demosite.PolicyYAML(site.URL)
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, polYAML, 0o600); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse(polYAML, polFile)
	if err != nil {
		b.Fatal(err)
	}
	const task = "Look up SYN-0042"
	pwMCP := playwrightMCP()
	if pwMCP == "" {
		b.Logf("Playwright MCP not installed (cd bench/playwright-mcp && npm ci --ignore-scripts): counting ours only")
	}
	var ours coordinator.Usage
	var oursResults, peerResults int
	var peer peerCount
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "run", "--task", task, "--policy", polFile, "--json", "--db", filepath.Join(dir, fmt.Sprintf("a%d.db", i)),
			"--transcript", filepath.Join(dir, "transcript.jsonl"))
		cmd.Dir = testbrowser.RepoRoot()
		cmd.Env = append(os.Environ(), "BROWSER_AGENT_DRIVER_DIR="+testbrowser.DriverDir())
		out, err := cmd.Output()
		var res struct {
			Status string            `json:"status"`
			Usage  coordinator.Usage `json:"usage"`
		}
		if jerr := json.Unmarshal(out, &res); jerr != nil || res.Status != "answered" {
			b.Fatalf("browser-agent run: %v %v %v\n%s", err, jerr, res.Status, out)
		}
		ours = res.Usage
		oursResults = toolResultChars(b, filepath.Join(dir, "transcript.jsonl"))
		if pwMCP != "" {
			peer = countPeer(b, pwMCP, pol, site.URL, task)
			peerResults = peer.results
		}
	}
	b.ReportMetric(float64(ours.ModelTurns), "ours-turns")
	b.ReportMetric(float64(ours.PromptTokens), "ours-input-tokens")
	b.ReportMetric(float64(ours.CompletionTokens), "ours-output-tokens")
	b.ReportMetric(float64(oursResults), "ours-result-chars")
	if pwMCP != "" {
		b.ReportMetric(float64(peer.turns), "peer-turns")
		b.ReportMetric(float64(peer.input), "peer-input-tokens")
		b.ReportMetric(float64(peer.inputNoSpecs), "peer-input-tokens-without-specs")
		b.ReportMetric(float64(peer.output), "peer-output-tokens")
		b.ReportMetric(float64(peerResults), "peer-result-chars")
		b.ReportMetric(float64(ours.PromptTokens)/float64(peer.input), "ours/peer-input")
	}
}

// toolResultChars sums the characters of the tool results in a transcript.
func toolResultChars(b *testing.B, path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m coordinator.Message
		if json.Unmarshal([]byte(line), &m) == nil && m.Role == coordinator.RoleTool {
			n += len([]rune(m.Content))
		}
	}
	return n
}

type peerCount struct {
	turns, input, inputNoSpecs, output, results int
}

// countPeer runs Playwright MCP's three navigations and counts the conversation a model driving
// it would be billed for.
func countPeer(b *testing.B, cli string, pol *policy.Policy, origin, task string) peerCount {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command("node", cli, "--headless", "--isolated", "--executable-path", testbrowser.Chromium(), "--no-sandbox")
	cmd.Dir = b.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("playwright-mcp: connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	var specs []coordinator.ToolSpec
	for _, t := range lt.Tools {
		schema, _ := json.Marshal(t.InputSchema)
		specs = append(specs, coordinator.ToolSpec{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	// The same system prompt and task as ours: the difference counted is the tools and what they return.
	msgs := []coordinator.Message{
		{Role: coordinator.RoleSystem, Content: coordinator.SystemPrompt(pol)},
		{Role: coordinator.RoleUser, Content: "Task: " + task + "\nThe record this task is about: SYN-0042."},
	}
	var c peerCount
	turn := func(reply coordinator.Message) {
		c.turns++
		c.input += coordinator.PromptTokens(msgs, specs)
		c.inputNoSpecs += coordinator.PromptTokens(msgs, nil)
		c.output += coordinator.OutputTokens(reply)
		msgs = append(msgs, reply)
	}
	// Playwright MCP 0.0.83's browser_navigate writes the page's snapshot to a file and returns its
	// name; browser_snapshot returns it. The peer's model asks for both in one turn (two tool calls,
	// run in order): the fewest turns it can take.
	for i, u := range []string{origin + "/search?q=SYN-0042", origin + "/records/SYN-0042", origin + "/sources/b/SYN-0042"} {
		nav, _ := json.Marshal(map[string]string{"url": u})
		calls := []coordinator.ToolCall{
			{ID: fmt.Sprintf("call_%d_1", i+1), Name: "browser_navigate", Args: nav},
			{ID: fmt.Sprintf("call_%d_2", i+1), Name: "browser_snapshot", Args: json.RawMessage(`{}`)},
		}
		turn(coordinator.Message{Role: coordinator.RoleAssistant, ToolCalls: calls})
		for _, call := range calls {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.Name, Arguments: call.Args})
			if err != nil || res.IsError {
				b.Fatalf("playwright-mcp: %s %s: %v\n%s", call.Name, u, err, stderr.String())
			}
			var text strings.Builder
			for _, part := range res.Content {
				if t, ok := part.(*mcp.TextContent); ok {
					text.WriteString(t.Text)
				}
			}
			c.results += len([]rune(text.String()))
			if f := os.Getenv("BENCH_PEER_RESULTS"); f != "" { // a file to append the peer's results to
				if w, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
					fmt.Fprintf(w, "## %s %s\n%s\n", call.Name, u, text.String())
					w.Close()
				}
			}
			msgs = append(msgs, coordinator.Message{Role: coordinator.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: text.String()})
		}
	}
	rec, _ := json.Marshal(map[string]any{
		"record_id": "SYN-0042", "fields": map[string]string{"Record ID": "SYN-0042", "Name": "Crimson Landing Study", "Status": "Pending",
			"Region": "South", "Owner": "T. Petrov", "Updated": "2024-10-26"},
		"sources": []string{origin + "/records/SYN-0042", origin + "/sources/b/SYN-0042"},
	})
	turn(coordinator.Message{Role: coordinator.RoleAssistant, Content: string(rec)})
	return c
}
