package readerjs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGeneratedFileCurrent fails when bridge/js/reader/01_consts.js is not what JS writes: a
// constant changed on one side only.
func TestGeneratedFileCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "js", "reader", "01_consts.js")
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := JS(); !bytes.Equal(have, want) {
		t.Errorf("%s is not current: run go generate ./bridge\nhave:\n%s\nwant:\n%s", path, have, want)
	}
}

func TestJSString(t *testing.T) {
	for in, want := range map[string]string{
		"read": "'read'", "\uE000": `'\uE000'`, "a'b\\c": `'a\'b\\c'`, "\n": `'\u000A'`, "\U0001F600": `'\u{1F600}'`,
	} {
		if got := jsString(in); got != want {
			t.Errorf("jsString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestNamesUnique: two constants of one name would be a syntax error in the reader.
func TestNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Consts {
		if seen[c.Name] {
			t.Errorf("%s twice", c.Name)
		}
		seen[c.Name] = true
	}
}

// TestNoCopies fails when a reader file other than the generated one writes a shared constant's
// value itself (a mode or paint mode compared as a literal, a verdict as a number, a mark as an
// escape) instead of using its name.
func TestNoCopies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "js", "reader", "*.js"))
	if err != nil || len(files) < 3 {
		t.Fatalf("reader files: %v %v", files, err)
	}
	copies := regexp.MustCompile(`opts\.(mode|paint) [!=]== '|\bvd [!=]== \d|verdicts\[[^\]]*\] [!=]== \d|[^/]\\uE00[0-3]|[\x{E000}-\x{E003}]`)
	for _, f := range files {
		if filepath.Base(f) == "01_consts.js" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := copies.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: use the constant of 01_consts.js", f, i+1, m)
			}
		}
	}
}
