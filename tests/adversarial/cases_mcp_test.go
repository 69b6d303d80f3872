package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/policy"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The same hostile pages, driven through "browser-agent mcp" by a compromised MCP client: the
// script's tool calls are made as MCP tool calls (unknown tools and bad arguments included), a
// final answer is given to check_answer, and the client goes on after every refusal, denial and
// credential page, where a run would have stopped. The observations are the harness's: canary
// hits, UDP packets, mutations, the secret in stdout (the MCP stream), stderr, the tool results
// and the audit db, the marker in the tool results, the site reached. Each case keeps its
// positive control. The run's status is the status of the session's audit run (kind mcp).

// mcpPerFamily is how many cases of each family go through MCP, spread over the family's table.
const mcpPerFamily = 3

// mcpAlways are cases that go through MCP whatever the spread picks (by name).
var mcpAlways = []string{"websocket", "websocket from worker", "password field", "past the step budget", "evaluate tool", "tool name case"}

// mcpNotApplicable are cases whose claim is about the run's task, which an MCP session does not
// have: "record id of another record" answers about SYN-0043 with SYN-0043's own evidence, which
// is a backed answer when no task names SYN-0042.

var mcpNotApplicable = []string{"record id of another record"}

// mcpCases picks the cases driven through MCP: up to mcpPerFamily of every family, spread over its
// table, plus mcpAlways.
func mcpCases(t *testing.T) []*tcase {
	byFam := map[string][]*tcase{}
	var fams []string
	for _, c := range allCases(t) {
		if c.External != "" || slices.Contains(mcpNotApplicable, c.Name) {
			continue
		}
		if _, ok := byFam[c.Family]; !ok {
			fams = append(fams, c.Family)
		}
		byFam[c.Family] = append(byFam[c.Family], c)
	}
	var out []*tcase
	for _, f := range fams {
		cs := byFam[f]
		k := min(len(cs), mcpPerFamily)
		for i, c := range cs {
			picked := false
			for j := 0; j < k; j++ {
				if i == j*len(cs)/k {
					picked = true
				}
			}
			if picked || slices.Contains(mcpAlways, c.Name) {
				out = append(out, c)
			}
		}
	}
	return out
}

// mcpWant is what a case's statuses become through MCP. There is no task and no model to reject:
// a rejection case's script is made by a client that has no task, and must still reach nothing.
func mcpWant(c *tcase) []string {
	want := c.Want
	if len(want) == 0 {
		want = stBlocked
	}
	if slices.Equal(want, stRejected) {
		return stBlocked
	}
	return want
}

// runMCP drives the case's script through "browser-agent mcp --policy P --db D" over stdio.
// clientReserve is the time the MCP client keeps at the end of its own for the session's end: a
// read of a page whose proof ran out of time takes up to 30 s (twice the bridge's call time).
const clientReserve = 40 * time.Second

func runMCP(t *testing.T, e *env) guarded {
	t.Helper()
	guardSem <- struct{}{}
	defer func() { <-guardSem }()
	pol := filepath.Join(e.dir, "policy.yaml")
	os.WriteFile(pol, []byte(e.policyYAML()), 0o600)
	db := filepath.Join(e.dir, "audit.db")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp", "--policy", pol, "--db", db)
	cmd.Dir = e.dir
	cmd.Env = binaryEnv(e)
	var out, errb bytes.Buffer
	var outMu sync.Mutex
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tee := io.TeeReader(stdout, writerFunc(func(p []byte) (int, error) {
		outMu.Lock()
		defer outMu.Unlock()
		return out.Write(p)
	}))
	client := mcp.NewClient(&mcp.Implementation{Name: "compromised-client", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(tee), Writer: stdin}, nil)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("connect: %v\nstderr: %s", err, errb.String())
	}
	var transcript strings.Builder
	var s struct{ Steps []scriptStep }
	if err := json.Unmarshal([]byte(e.script()), &s); err != nil {
		t.Fatalf("script: %v", err)
	}
	// A session has no task: the client first searches for the task's record, which binds the
	// session to it as a run is bound to its task (open_url then opens the record's own routes).
	// The site hits of that search do not count as the case reaching the hostile site.
	task := e.c.Task
	if task == "" {
		task = "Look up SYN-0042"
	}
	if pol, err := policy.Parse([]byte(e.policyYAML()), "case policy"); err != nil {
		t.Fatal(err)
	} else if pt, err := pol.ParseTask(task); err == nil {
		q, _ := json.Marshal(map[string]string{"query": pt.RecordID})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_site", Arguments: json.RawMessage(q)})
		fmt.Fprintf(&transcript, "call search_site %s (binds the session to the task's record)\n", q)
		if err == nil && res != nil {
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					transcript.WriteString(tc.Text + "\n")
				}
			}
		}
		e.siteHits.Store(0)
	}
	dl, _ := ctx.Deadline()
	for _, st := range s.Steps {
		if time.Until(dl) < clientReserve {
			// A client that has waited long enough stops, as a person at it would: the
			// session ends cleanly and the case's checks judge what reached it (a long live
			// page under the suite's load reads on for minutes; killed, the server left no
			// run's end).
			fmt.Fprintf(&transcript, "the client stops: under %v left of its time\n", clientReserve)
			break
		}
		name, args := st.Call, st.Args
		if name == "" {
			var fin map[string]json.RawMessage
			if json.Unmarshal(st.Final, &fin) != nil {
				continue // a text turn: nothing to call
			}
			if _, ok := fin["cannot_answer"]; ok {
				continue
			}
			name, args = "check_answer", st.Final
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		fmt.Fprintf(&transcript, "call %s %s\n", name, args)
		if err != nil {
			fmt.Fprintf(&transcript, "error: %v\n", err)
			continue
		}
		b, _ := json.Marshal(res)
		transcript.Write(b)
		transcript.WriteByte('\n')
	}
	cs.Close()
	stdin.Close()
	err = cmd.Wait()
	var g guarded
	if xe, ok := err.(*exec.ExitError); ok {
		g.code = xe.ExitCode()
	} else if err != nil {
		t.Fatalf("browser-agent mcp: %v", err)
	}
	time.Sleep(150 * time.Millisecond) // let in-flight requests land in the counters
	outMu.Lock()
	g.stdout = out.String()
	outMu.Unlock()
	g.stderr, g.transc = errb.String(), transcript.String()
	g.audit = map[string]string{}
	for _, sfx := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(db + sfx); err == nil {
			g.audit["audit"+sfx] = string(b)
		}
	}
	// The status is the session's audit run's, as "browser-agent audit" shows it.
	aout, err := exec.Command(binary, "audit", "--json", "--db", db).Output()
	if err != nil {
		t.Fatalf("browser-agent audit: %v", err)
	}
	var runs struct {
		Runs []struct{ Status, Reason, Kind string }
	}
	if err := json.Unmarshal(aout, &runs); err != nil {
		t.Fatalf("audit --json: %v", err)
	}
	switch len(runs.Runs) {
	case 0:
		// No call reached a tool (every one was an unknown tool): nothing ran.
		g.res.Status, g.res.Reason = "blocked", "no tool call ran"
	case 1:
		r := runs.Runs[0]
		if r.Kind != "mcp" {
			t.Errorf("audit run kind %q, want mcp", r.Kind)
		}
		g.res.Status, g.res.Reason = r.Status, r.Reason
	default:
		// A spent budget ends the browser session and the next call starts another (issue 49):
		// one run per browser session. Each one before the last must have ended by a spent
		// budget; the case's status is theirs when they all agree.
		var reasons []string
		g.res.Status = runs.Runs[0].Status
		for _, r := range runs.Runs {
			if r.Kind != "mcp" {
				t.Errorf("audit run kind %q, want mcp", r.Kind)
			}
			if r.Status != g.res.Status {
				g.res.Status = "mixed: " + g.res.Status + ", " + r.Status
			}
			reasons = append(reasons, r.Reason)
		}
		budget := 0
		for _, r := range runs.Runs {
			if strings.Contains(r.Reason, "budget exhausted") && strings.Contains(r.Reason, "the browser session ended") {
				budget++
			}
		}
		if budget < len(runs.Runs)-1 {
			t.Errorf("audit: %d runs for one session, %d of them ended by a spent budget: want every run but one ended so: %v", len(runs.Runs), budget, reasons)
		}
		g.res.Reason = strings.Join(reasons, " | ")
	}
	return g
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var (
	mcpOutMu    sync.Mutex
	mcpOutcomes = map[string]outcome{}
)

func TestAdversarialMCP(t *testing.T) {
	start := time.Now()
	cases := mcpCases(t)
	cases = only(cases)
	t.Run("case", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Family+"/"+c.Name, func(t *testing.T) {
				t.Parallel()
				armed, na := armOnce(t, c)
				mc := *c
				mc.Want = mcpWant(c)
				e := newEnv(t, &mc)
				g := runMCP(t, e)
				ok := checkGuarded(t, e, g)
				if ok {
					t.Logf("guarded through MCP: %s: %s", g.res.Status, g.res.Reason)
				}
				mcpOutMu.Lock()
				mcpOutcomes[c.Family+"/"+c.Name] = outcome{family: c.Family, armed: armed, guard: ok, binary: true, na: na}
				mcpOutMu.Unlock()
			})
		}
	})
	summary(t, "through MCP (browser-agent mcp; positive controls armed once per package)", &mcpOutMu, mcpOutcomes)
	t.Logf("%d cases through MCP in %s", len(cases), time.Since(start).Round(time.Second))
}

// TestMCPCaseTable checks the MCP selection: at least 30 cases, every family of the table.
func TestMCPCaseTable(t *testing.T) {
	fams := map[string]bool{}
	for _, c := range allCases(t) {
		if c.External == "" {
			fams[c.Family] = true
		}
	}
	cs := mcpCases(t)
	got := map[string]int{}
	for _, c := range cs {
		got[c.Family]++
	}
	t.Logf("%d cases through MCP: %v", len(cs), got)
	if len(cs) < 30 {
		t.Errorf("%d cases through MCP, want at least 30", len(cs))
	}
	for f := range fams {
		if got[f] == 0 {
			t.Errorf("family %s has no case through MCP", f)
		}
	}
	for _, n := range mcpAlways {
		found := false
		for _, c := range cs {
			found = found || c.Name == n
		}
		if !found {
			t.Errorf("case %q is not in the table", n)
		}
	}
}
