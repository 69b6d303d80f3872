package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: the file written passes the check; a file edited by hand, or missing, fails it, and
// the error names the file; bad usage is exit code 2.
func TestRun(t *testing.T) {
	var out bytes.Buffer // what run writes to stderr
	dst := filepath.Join(t.TempDir(), "consts.js")
	for _, c := range []struct {
		name string
		edit []byte // written to dst before the step, when not nil
		args []string
		code int
	}{
		{name: "check of a missing file", args: []string{"-check", dst}, code: 1},
		{name: "write", args: []string{dst}, code: 0},
		{name: "check of the file just written", args: []string{"-check", dst}, code: 0},
		{name: "check of a file edited by hand", edit: []byte("  const RUN_VISIBLE = 1;\n"), args: []string{"-check", dst}, code: 1},
		{name: "no argument", code: 2},
	} {
		if c.edit != nil {
			if err := os.WriteFile(dst, c.edit, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out.Reset()
		if code := run(c.args, &out); code != c.code {
			t.Errorf("%s: exit %d, want %d (%s)", c.name, code, c.code, out.String())
		}
		if c.code == 1 && !strings.Contains(out.String(), dst) {
			t.Errorf("%s: the error does not name %s: %s", c.name, dst, out.String())
		}
	}
}
