package testbrowser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoRoot: RepoRoot is the folder that holds the module's go.mod, wherever this package sits.
func TestRepoRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "go.mod"))
	if err != nil || !strings.HasPrefix(string(b), "module github.com/browser-agent/browser-agent\n") {
		t.Fatalf("RepoRoot %s holds no go.mod of the module (%v)", RepoRoot(), err)
	}
}
