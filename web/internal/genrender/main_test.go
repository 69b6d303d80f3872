package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: the copy is the source under the header, -check passes on it and fails on a stale or
// missing copy without writing anything.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.js"), filepath.Join(dir, "dst.js")
	if err := os.WriteFile(src, []byte("export const a = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(src, dst, true); err == nil {
		t.Error("-check passed with no copy")
	}
	if err := run(src, dst, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if string(got) != header+"export const a = 1;\n" {
		t.Errorf("copy: %q", got)
	}
	if err := run(src, dst, true); err != nil {
		t.Errorf("-check on a current copy: %v", err)
	}
	if err := os.WriteFile(src, []byte("export const a = 2;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(src, dst, true); err == nil || !strings.Contains(err.Error(), "go generate ./web") {
		t.Errorf("-check on a stale copy: %v", err)
	}
	if got2, _ := os.ReadFile(dst); string(got2) != string(got) {
		t.Error("-check wrote the copy")
	}
}
