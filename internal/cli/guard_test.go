package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardUsage: a guard command line that would leave the browser outside the wall, or has no
// upstream, is a usage error naming what is wrong, and writes nothing (no audit database).
func TestGuardUsage(t *testing.T) {
	_, db := tempDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no upstream", []string{"guard", "--db", db}, "no upstream command"},
		{"nothing after --", []string{"guard", "--db", db, "--"}, "no upstream command"},
		{"own cdp endpoint", []string{"guard", "--db", db, "--", "npx", "@playwright/mcp", "--cdp-endpoint", "ws://127.0.0.1:9222"}, "--cdp-endpoint"},
		{"own proxy", []string{"guard", "--db", db, "--", "npx", "@playwright/mcp", "--proxy-server=http://127.0.0.1:3128"}, "--proxy-server"},
		{"own config", []string{"guard", "--db", db, "--", "npx", "@playwright/mcp", "--config", "c.json"}, "--config"},
		{"http beyond loopback without a token", []string{"guard", "--db", db, "--http", "0.0.0.0:0", "--", "npx", "@playwright/mcp"}, "bearer token"},
		{"the write flag: the policy chooses the mode", []string{"guard", "--db", db, "--write", "--", "npx", "@playwright/mcp"}, `set "guard:" with "mode: write" in the policy file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvMCPToken, "")
			code, out, errOut := runCLI(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("%q:\n\tgot  %d %q %q\n\twant %d and stderr naming %q", tc.args, code, out, errOut, ExitUsage, tc.want)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Errorf("%q wrote the audit database", tc.args)
			}
		})
	}
}

// TestMCPWithoutPolicySaysSo: mcp without --policy serves the demo site and says so once on
// stderr; with a policy file that does not load it is a usage error, without that notice.
func TestMCPWithoutPolicySaysSo(t *testing.T) {
	dir, db := tempDB(t)
	const notice = "browser-agent mcp: no --policy: serving the embedded demo site in-process; the browser can reach only it\n"
	code, _, errOut := runCLI(t, "mcp", "--db", db)
	if code != 0 || strings.Count(errOut, notice) != 1 {
		t.Errorf("mcp without --policy (stdin at its end): got %d, stderr %q; want 0 and the notice once", code, errOut)
	}
	code, _, errOut = runCLI(t, "mcp", "--db", db, "--policy", filepath.Join(dir, "missing.yaml"))
	if code != ExitUsage || strings.Contains(errOut, "no --policy") || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("mcp with a missing policy file: got %d, stderr %q; want %d naming the file, no notice", code, errOut, ExitUsage)
	}
}

// tempDB returns a new directory and the path of an audit database in it (not created).
func tempDB(t *testing.T) (dir, db string) {
	dir = t.TempDir()
	return dir, filepath.Join(dir, "audit.db")
}
