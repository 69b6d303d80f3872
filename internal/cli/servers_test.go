package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPWithoutPolicySaysSo: mcp without --policy serves the demo site and says so once on
// stderr; with a policy file that does not load it is a usage error, without that notice.
func TestMCPWithoutPolicySaysSo(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "audit.db")
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
