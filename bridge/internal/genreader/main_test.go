package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRun: the file written passes the check; a file edited by hand, or missing, fails it; bad
// usage is exit code 2.
func TestRun(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "consts.js")
	if code := run([]string{"-check", dst}, io.Discard); code != 1 {
		t.Errorf("check of a missing file: exit %d, want 1", code)
	}
	if code := run([]string{dst}, io.Discard); code != 0 {
		t.Fatalf("write: exit %d", code)
	}
	if code := run([]string{"-check", dst}, io.Discard); code != 0 {
		t.Errorf("check of the file just written: exit %d, want 0", code)
	}
	if err := os.WriteFile(dst, []byte("  const RUN_VISIBLE = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"-check", dst}, io.Discard); code != 1 {
		t.Errorf("check of a file edited by hand: exit %d, want 1", code)
	}
	if code := run(nil, io.Discard); code != 2 {
		t.Errorf("no argument: exit %d, want 2", code)
	}
}
