package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// npmClient makes sure the npm client's dependencies are installed (npm ci from its
// package-lock.json, from the npm registry, into its gitignored node_modules; nothing when they
// already are) and returns its directory.
func npmClient(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot, "tests", "mcp", "npmclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is needed to install the third-party MCP client (tests/mcp/npmclient): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

type npmOut struct {
	Server struct{ Name string }
	Tools  []struct {
		Name         string
		ReadOnlyHint bool
	}
	Calls []struct {
		Name, Status, Rule, Reason, Source, ProtocolError string
		IsError                                           bool
	}
}

func checkNPM(t *testing.T, out []byte, stderr string) {
	t.Helper()
	var o npmOut
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("npm client output: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	if o.Server.Name != "browser-agent" {
		t.Errorf("server name %q", o.Server.Name)
	}
	var names []string
	for _, tl := range o.Tools {
		names = append(names, tl.Name)
		if !tl.ReadOnlyHint {
			t.Errorf("npm client sees %s without readOnlyHint", tl.Name)
		}
	}
	if !sameSet(names, sevenTools) {
		t.Errorf("npm client tools/list:\n\tgot  %v\n\twant %v", names, sevenTools)
	}
	want := []struct {
		name, status string
		isError      bool
		reason       string
	}{
		{"search_site", "ok", false, ""},
		{"list_links", "ok", false, ""},
		{"open_url", "ok", false, ""},
		{"read_page", "ok", false, ""},
		{"extract_fields", "ok", false, ""},
		{"check_answer", "answered", false, ""},
		{"open_url", "denied", true, "write word"},
		{"open_url", "refused", true, `unknown argument "URL"`},
		{"browser_evaluate", "", false, ""},
	}
	if len(o.Calls) != len(want) {
		t.Fatalf("npm client made %d calls, want %d: %+v", len(o.Calls), len(want), o.Calls)
	}
	for i, w := range want {
		c := o.Calls[i]
		if w.name == "browser_evaluate" {
			if !strings.Contains(c.ProtocolError, `unknown tool "browser_evaluate"`) {
				t.Errorf("npm client browser_evaluate:\n\tgot  %+v\n\twant the protocol error unknown tool", c)
			}
			continue
		}
		if c.Name != w.name || c.Status != w.status || c.IsError != w.isError || !strings.Contains(c.Reason, w.reason) || c.ProtocolError != "" {
			t.Errorf("npm client call %d:\n\tgot  %+v\n\twant %s status %s isError %v reason containing %q", i+1, c, w.name, w.status, w.isError, w.reason)
		}
	}
}

// A client that is not this project's: the TypeScript SDK, over stdio and over HTTP.
func TestNPMClient(t *testing.T) {
	dir := npmClient(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("stdio", func(t *testing.T) {
		tmp := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "client.mjs", "stdio", binary, "mcp", "--db", filepath.Join(tmp, "audit.db"))
		cmd.Dir, cmd.Env = dir, binEnv(tmp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm client: %v\nstderr:\n%s", err, stderr.String())
		}
		checkNPM(t, out, stderr.String())
		runs := auditRuns(t, filepath.Join(tmp, "audit.db"))
		if len(runs) != 1 || runs[0]["client"] != "npm-sdk-client 1.32.2" || runs[0]["kind"] != "mcp" {
			t.Errorf("audit after the npm client: %v", runs)
		}
	})
	t.Run("http", func(t *testing.T) {
		srv := httpServer(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "client.mjs", "http", srv.url)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm client: %v\nstderr:\n%s\nserver:\n%s", err, stderr.String(), srv.stderr)
		}
		checkNPM(t, out, stderr.String())
	})
}
