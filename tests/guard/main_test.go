// Package guard_test drives the real browser-agent binary's guard in front of the real Playwright
// MCP (@playwright/mcp, pinned in bench/playwright-mcp and installed here with npm ci) on hostile
// pages served on 127.0.0.1, over http and https, each promise beside a positive control through
// the same Playwright MCP unguarded.
package guard_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
)

var (
	binary    string
	playwrite string // Playwright MCP's cli.js
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir := filepath.Join(testbrowser.RepoRoot(), "bench", "playwright-mcp")
	playwrite = filepath.Join(dir, "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(playwrite); err != nil {
		// The pinned lockfile; no install scripts: Chromium is the system's.
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: npm ci in bench/playwright-mcp:", err)
			return 1
		}
	}
	return testbrowser.RunWithBinary(m, &binary)
}
