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
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// longTokenPages are PostgreSQL manual pages (Debian's postgresql-doc-15) from 44 to 109 KB of
// HTML: long pages the web's own tools built. (sql-createtable.html is not one: the policy refuses its
// path, "create" being a write word, even named.)
var longTokenPages = []string{
	"runtime-config-query.html", "datatype-datetime.html", "plpgsql-control-structures.html",
	"functions-string.html", "libpq-connect.html", "functions-datetime.html", "functions-json.html",
	"sql-select.html", "functions-matching.html", "pgbench.html",
}

// BenchmarkLongPageTokens counts what reading long pages costs a chat model, as billed: model
// turns and input tokens, cumulative (each turn re-sends the system prompt, the tool specs and the
// whole conversation), one conversation per page, counted with the same tokenizer and framing
// (coordinator.PromptTokens, o200k_base) for both sides, each side's tool specs as its tools/list
// gives them:
//
//   - whole: read the page to its end. Ours: browser-agent mcp (the real binary, guarded
//     Chromium), open_url {"length":65536} (the page's text up to 64 KiB with its first result),
//     then read_page {"length":65536} until nothing more follows; the peer: Playwright MCP,
//     browser_navigate + browser_snapshot in one turn.
//   - find: what the page says about a phrase from its last fifth. Ours: open_url then
//     read_page {"find": phrase}; the peer: navigate + snapshot (it has no other way to the text).
//
// Both end with the same short answer turn. Needs bench/playwright-mcp installed for the peer.
func BenchmarkLongPageTokens(b *testing.B) {
	man := testutil.ManualByName(b, "postgresql")
	site, _, _ := testutil.ServeDir(b, man.Dir)
	dir := b.TempDir()
	// The policy names each page: a URL the task gives is one of the policy's routes, so the
	// model may open it without a page presenting it first.
	polYAML := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read:\n", site.URL)
	for _, p := range longTokenPages {
		polYAML += "      - /" + p + "\n"
	}
	polYAML += "limits:\n  max_steps: 200\n"
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte(polYAML), 0o600); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte(polYAML), polFile)
	if err != nil {
		b.Fatal(err)
	}
	pwMCP := playwrightMCP()
	if pwMCP == "" {
		b.Fatalf("Playwright MCP not installed: cd bench/playwright-mcp && npm ci --ignore-scripts")
	}
	bin := agentBinary(b)
	var sum struct{ oursWhole, oursFind, peer, oursTurnsWhole, oursTurnsFind, peerTurns, oursChars, peerChars int }
	for i := 0; i < b.N; i++ {
		sum = struct{ oursWhole, oursFind, peer, oursTurnsWhole, oursTurnsFind, peerTurns, oursChars, peerChars int }{}
		cmd := exec.Command(bin, "mcp", "--policy", polFile, "--session-time", "1h", "--db", filepath.Join(dir, fmt.Sprintf("audit%d.db", i)))
		cmd.Env = append(os.Environ(), "BROWSER_AGENT_DRIVER_DIR="+testbrowser.DriverDir(), "HOME="+dir, "BROWSER_AGENT_DB=")
		ours := startMCP(b, "browser-agent mcp", cmd)
		peerCmd := exec.Command("node", pwMCP, "--headless", "--isolated", "--executable-path", testbrowser.Chromium(), "--no-sandbox")
		peerCmd.Dir = dir
		peer := startMCP(b, "playwright-mcp", peerCmd)
		for _, p := range longTokenPages {
			u := site.URL + "/" + p
			// Ours, the whole page.
			conv := ours.conversation(pol, "Read the page "+u+" to its end.")
			var text strings.Builder
			data := conv.ok(b, call{"open_url", map[string]any{"url": u, "length": coordinator.MaxReadLength}})
			text.WriteString(data["text"].(string))
			for data["more"] == true {
				data = conv.ok(b, call{"read_page", map[string]any{"length": coordinator.MaxReadLength, "offset": int(data["next"].(float64))}})
				text.WriteString(data["text"].(string))
			}
			conv.answer("Read to its end.")
			sum.oursWhole += conv.input
			sum.oursTurnsWhole += conv.turns
			sum.oursChars += conv.results
			wholeTurns, wholeInput := conv.turns, conv.input
			// Ours, a phrase from the last fifth of the page's text.
			phrase := phraseAt(text.String(), 0.8)
			conv = ours.conversation(pol, fmt.Sprintf("What does the page %s say about %q?", u, phrase))
			first := conv.ok(b, call{"open_url", map[string]any{"url": u}})
			found := conv.ok(b, call{"read_page", map[string]any{"find": phrase}})
			// A search that stopped short of the page's end (under load a read's proof can run
			// out of its time having proven nothing more) is gone on with from where it stopped,
			// as a model would: a turn each, billed.
			for try := 0; found["matches"] == 0.0 && found["more"] == true && try < 4; try++ {
				from := int(found["searched"].([]any)[1].(float64))
				b.Logf("%s: find %q stopped at %d; again from there", p, phrase, from)
				found = conv.ok(b, call{"read_page", map[string]any{"find": phrase, "offset": from}})
			}
			if found["matches"] == nil || found["matches"].(float64) < 1 {
				b.Fatalf("%s: find %q: no match in %v", p, phrase, found)
			}
			conv.answer("It says what the passage says.")
			sum.oursFind += conv.input
			sum.oursTurnsFind += conv.turns
			findInput, firstNext := conv.input, first["next"]
			// The peer: one conversation serves both tasks (it reads the whole page either way).
			conv = peer.conversation(pol, "Read the page "+u+" to its end.")
			conv.turn(b, call{"browser_navigate", map[string]any{"url": u}}, call{"browser_snapshot", map[string]any{}})
			conv.answer("Read to its end.")
			sum.peer += conv.input
			sum.peerTurns += conv.turns
			sum.peerChars += conv.results
			b.Logf("%s: %d bytes of text; whole: ours %d turns, %d input tokens; find: %d (first chunk to %v); peer %d turns, %d (whole %.2fx)",
				p, text.Len(), wholeTurns, wholeInput, findInput, firstNext, conv.turns, conv.input, float64(wholeInput)/float64(conv.input))
		}
		ours.close()
		peer.close()
	}
	b.ReportMetric(float64(sum.oursWhole), "ours-whole-input-tokens")
	b.ReportMetric(float64(sum.oursFind), "ours-find-input-tokens")
	b.ReportMetric(float64(sum.peer), "peer-input-tokens")
	b.ReportMetric(float64(sum.oursTurnsWhole), "ours-whole-turns")
	b.ReportMetric(float64(sum.oursTurnsFind), "ours-find-turns")
	b.ReportMetric(float64(sum.peerTurns), "peer-turns")
	b.ReportMetric(float64(sum.oursChars), "ours-whole-result-chars")
	b.ReportMetric(float64(sum.peerChars), "peer-result-chars")
	b.ReportMetric(float64(sum.oursWhole)/float64(sum.peer), "ours/peer-whole")
	b.ReportMetric(float64(sum.oursFind)/float64(sum.peer), "ours/peer-find")
}

// phraseAt is four words of text starting at the word nearest share of its length: a phrase a
// person reading that far would ask about.
func phraseAt(text string, share float64) string {
	words := strings.Fields(text)
	i := min(int(share*float64(len(words))), max(len(words)-4, 0))
	return strings.Join(words[i:min(i+4, len(words))], " ")
}

// ok is one call of ours in a turn of its own, again (a turn each) while the browser errs, and
// its result's page data.
func (c *conv) ok(b *testing.B, cl call) map[string]any {
	for {
		res := c.turn(b, cl)
		if env, err := coordinator.DecodeResult(res[0]); err == nil && env["status"] == "error" {
			b.Logf("%s: %v: %v; again", cl.name, cl.args, env["reason"])
			continue
		}
		return untrusted(b, res[0])
	}
}

// untrusted decodes a browser-agent tool result's page data.
func untrusted(b *testing.B, content string) map[string]any {
	env, err := coordinator.DecodeResult(content)
	if err != nil {
		b.Fatalf("%v: %s", err, content)
	}
	data, ok := env["untrusted_page_data"].(map[string]any)
	if !ok || env["status"] != "ok" {
		b.Fatalf("not an ok result: %s", content)
	}
	return data
}

// mcpPeer is an MCP server driven as a model would drive it: its tool specs as tools/list gives
// them, every call's text result appended to the conversation.
type mcpPeer struct {
	name   string
	cs     *mcp.ClientSession
	specs  []coordinator.ToolSpec
	stderr *bytes.Buffer
}

func startMCP(b *testing.B, name string, cmd *exec.Cmd) *mcpPeer {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &mcpPeer{name: name, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("%s: connect: %v\n%s", name, err, p.stderr)
	}
	p.cs = cs
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range lt.Tools {
		schema, _ := json.Marshal(t.InputSchema)
		p.specs = append(p.specs, coordinator.ToolSpec{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return p
}

func (p *mcpPeer) close() { p.cs.Close() }

type call struct {
	name string
	args map[string]any
}

// conv is one model conversation over an MCP server, counted as billed.
type conv struct {
	p                     *mcpPeer
	msgs                  []coordinator.Message
	turns, input, results int
	errors                int // browser errors retried (a model would try again)
}

func (p *mcpPeer) conversation(pol *policy.Policy, task string) *conv {
	return &conv{p: p, msgs: []coordinator.Message{
		{Role: coordinator.RoleSystem, Content: coordinator.SystemPrompt(pol)},
		{Role: coordinator.RoleUser, Content: "Task: " + task},
	}}
}

// turn is one model turn asking for calls (run in order) and their results, returned as text.
func (c *conv) turn(b *testing.B, calls ...call) []string {
	reply := coordinator.Message{Role: coordinator.RoleAssistant}
	for i, cl := range calls {
		args, _ := json.Marshal(cl.args)
		reply.ToolCalls = append(reply.ToolCalls, coordinator.ToolCall{ID: fmt.Sprintf("call_%d_%d", c.turns+1, i+1), Name: cl.name, Args: args})
	}
	c.count(reply)
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range reply.ToolCalls {
		res, err := c.p.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.Name, Arguments: tc.Args})
		if err != nil || res.IsError && !c.retryable(res) {
			b.Fatalf("%s: %s %s: %v %v\n%s", c.p.name, tc.Name, tc.Args, err, res, c.p.stderr)
		}
		var text strings.Builder
		for _, part := range res.Content {
			if t, ok := part.(*mcp.TextContent); ok {
				text.WriteString(t.Text)
			}
		}
		c.results += len([]rune(text.String()))
		out = append(out, text.String())
		c.msgs = append(c.msgs, coordinator.Message{Role: coordinator.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: text.String()})
	}
	return out
}

// retryable reports whether a tool error is one a model would try again: the browser's own
// ("status": "error", a deadline on a loaded machine), not a refusal. The retry is a turn, billed.
func (c *conv) retryable(res *mcp.CallToolResult) bool {
	for _, part := range res.Content {
		if t, ok := part.(*mcp.TextContent); ok {
			if env, err := coordinator.DecodeResult(t.Text); err == nil && env["status"] == "error" {
				c.errors++
				return c.errors <= 3
			}
		}
	}
	return false
}

// answer is the last turn: the model's reply, no call.
func (c *conv) answer(text string) {
	c.count(coordinator.Message{Role: coordinator.RoleAssistant, Content: text})
}

func (c *conv) count(reply coordinator.Message) {
	c.turns++
	c.input += coordinator.PromptTokens(c.msgs, c.p.specs)
	c.msgs = append(c.msgs, reply)
}
