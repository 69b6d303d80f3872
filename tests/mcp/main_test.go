// Package mcp_test drives the real browser-agent binary as an MCP server, over stdio and over
// Streamable HTTP, with the official Go SDK's client and with a client from the npm registry.
package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var (
	binary    string
	repoRoot  string
	driverDir string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	repoRoot = testbrowser.RepoRoot()
	driverDir = testbrowser.DriverDir()
	return testbrowser.RunWithBinary(m, &binary)
}

// server is one browser-agent mcp process.
type server struct {
	dir, db string
	stderr  *testutil.Buffer
	cmd     *exec.Cmd
	url     string // --http only: the endpoint
}

func binEnv(dir string, extra ...string) []string {
	return append(append(os.Environ(), "BROWSER_AGENT_DRIVER_DIR="+driverDir, "HOME="+dir, "BROWSER_AGENT_DB="), extra...)
}

// stdioClient starts "browser-agent mcp ARGS" and connects the Go SDK's client over stdio.
func stdioClient(t testing.TB, name string, args ...string) (*mcp.ClientSession, *server) {
	t.Helper()
	dir := t.TempDir()
	s := &server{dir: dir, db: filepath.Join(dir, "audit.db"), stderr: &testutil.Buffer{}}
	cmd := exec.Command(binary, append([]string{"mcp", "--db", s.db}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, binEnv(dir), s.stderr
	s.cmd = cmd
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0.0.1-test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v\nstderr:\n%s", err, s.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, s
}

var listenRE = regexp.MustCompile(`at (http://\S+/mcp)`)

// httpServer starts "browser-agent mcp --http 127.0.0.1:0 ARGS" and waits for its endpoint.
func httpServer(t testing.TB, env []string, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{dir: dir, db: filepath.Join(dir, "audit.db"), stderr: &testutil.Buffer{}}
	cmd := exec.Command(binary, append([]string{"mcp", "--db", s.db, "--http", "127.0.0.1:0"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, binEnv(dir, env...), s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		if !testutil.WaitOrKill(cmd, 60*time.Second) {
			t.Errorf("browser-agent mcp --http did not stop within 60 s of SIGINT:\n%s", s.stderr)
		}
	})
	if !testutil.Eventually(60*time.Second, func() bool { return listenRE.MatchString(s.stderr.String()) }) {
		t.Fatalf("the HTTP server did not start:\n%s", s.stderr)
	}
	s.url = listenRE.FindStringSubmatch(s.stderr.String())[1]
	return s
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func tokenClient(token string) *http.Client { return &http.Client{Transport: bearer{token}} }

func httpClient(t testing.TB, s *server, name, token string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1, DisableStandaloneSSE: true}
	if token != "" {
		tr.HTTPClient = tokenClient(token)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0.0.1-test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v\nstderr:\n%s", err, s.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool with raw JSON arguments and returns the result and its structured content.
func call(t testing.TB, cs *mcp.ClientSession, name, args string) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var a any
	if args != "" {
		a = json.RawMessage(args)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
	if err != nil {
		t.Fatalf("%s %s: protocol error: %v", name, args, err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	if m == nil {
		t.Fatalf("%s %s: no structuredContent: %+v", name, args, res)
	}
	return res, m
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
