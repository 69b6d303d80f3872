package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
)

// The docs tests hold README.md and docs/ to the code. Every fenced code block in them carries a
// mark on the line before it, an HTML comment that says what the test does with it:
//
//	<!-- doc-test: run -->           run it with bash (-e, pipefail) in a copy of the checkout's root
//	<!-- doc-test: output -->        run each "$ command" line and compare its stdout with the lines after it
//	<!-- doc-test: policy [FILE] --> write it to FILE (the next blocks may use it) and validate it
//	<!-- doc-test: json -->          parse it as JSON
//	<!-- doc-test: skip: why -->     leave it, for the reason given
//
// A block without a mark fails, so that no command is forgotten. The commands run the binary
// TestMain built (bin/browser-agent is a link to it), offline, with an audit store of their own.
// BENCHMARKS.md, CHANGELOG.md and ARCHITECTURE.md need no marks; the reference checks
// (commands and flags, make targets, ./paths, relative links) read them too.

// markedDocs are the files whose code blocks must carry a mark.
func markedDocs(t *testing.T) []string {
	t.Helper()
	root := testbrowser.RepoRoot()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkedDocs are markedDocs and the other top-level documents the reference checks read.
func checkedDocs(t *testing.T) []string {
	root := testbrowser.RepoRoot()
	files := markedDocs(t)
	for _, f := range []string{"BENCHMARKS.md", "CHANGELOG.md", "ARCHITECTURE.md"} {
		files = append(files, filepath.Join(root, f))
	}
	return files
}

// block is one fenced code block of a markdown file.
type block struct {
	line int    // the opening fence's line, from 1
	mark string // what follows "doc-test:" on the line before it, "" without one
	text string // its content, the fence's indentation taken off
}

// doc is a markdown file split into its prose lines and its code blocks.
type doc struct {
	path   string
	prose  []string // lines outside code blocks (a code block's lines are blank here)
	blocks []block
}

var (
	fenceRE = regexp.MustCompile("^( *)(```|~~~)")
	markRE  = regexp.MustCompile(`^<!--\s*doc-test:\s*(.*?)\s*-->$`)
)

func readDoc(t *testing.T, path string) doc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := doc{path: path}
	lines := strings.Split(string(b), "\n")
	after := 0 // the first prose line after the last block: a mark is looked for from here only
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			d.prose = append(d.prose, lines[i])
			continue
		}
		bl := block{line: i + 1}
		for j := len(d.prose) - 1; j >= after; j-- {
			if s := strings.TrimSpace(d.prose[j]); s != "" {
				if mm := markRE.FindStringSubmatch(s); mm != nil {
					bl.mark = mm[1]
				}
				break
			}
		}
		indent, fence := m[1], m[2]
		d.prose = append(d.prose, "")
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
			d.prose = append(d.prose, "")
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: code block never closed", path, bl.line)
		}
		d.prose = append(d.prose, "")
		after = len(d.prose)
		bl.text = strings.Join(body, "\n")
		d.blocks = append(d.blocks, bl)
	}
	return d
}

// rel is path relative to the checkout's root, for messages.
func rel(path string) string {
	if r, err := filepath.Rel(testbrowser.RepoRoot(), path); err == nil {
		return r
	}
	return path
}

// workdir is a directory that looks like the checkout's root (a link to each of its entries) with
// bin/browser-agent linking to the binary under test, so that a block runs as written.
func workdir(t *testing.T) string {
	t.Helper()
	root := testbrowser.RepoRoot()
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "bin", ".git", ".state":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary, filepath.Join(dir, "bin", "browser-agent")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shell runs script with bash in dir, offline commands only, and returns its stdout and stderr.
func shell(dir, script string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BROWSER_AGENT_DB="+filepath.Join(dir, "audit.db"))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestDocsBlocks runs or checks every code block of README.md and docs/ as its mark says.
func TestDocsBlocks(t *testing.T) {
	for _, path := range markedDocs(t) {
		t.Run(rel(path), func(t *testing.T) {
			d := readDoc(t, path)
			dir := workdir(t)
			for _, b := range d.blocks {
				where := fmt.Sprintf("%s:%d", rel(path), b.line)
				kind, arg, _ := strings.Cut(b.mark, " ")
				switch {
				case b.mark == "":
					t.Errorf("%s: code block without a mark: put <!-- doc-test: run --> (or output, policy, json, skip: why) on the line before it", where)
				case kind == "skip:" || strings.HasPrefix(b.mark, "skip:"):
					if strings.TrimSpace(strings.TrimPrefix(b.mark, "skip:")) == "" {
						t.Errorf("%s: doc-test: skip without a reason", where)
					}
				case kind == "run":
					if out, errOut, err := shell(dir, b.text); err != nil {
						t.Errorf("%s: the block failed: %v\n%s\n---- stdout\n%s---- stderr\n%s", where, err, b.text, out, errOut)
					}
				case kind == "output":
					checkOutput(t, where, dir, b.text)
				case kind == "policy":
					name := arg
					if name == "" {
						name = fmt.Sprintf("policy-%d.yaml", b.line)
					}
					if err := os.WriteFile(filepath.Join(dir, name), []byte(b.text+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					if out, errOut, err := shell(dir, "browser-agent policy validate "+name); err != nil {
						t.Errorf("%s: the policy is not valid: %v\n%s%s", where, err, out, errOut)
					}
				case kind == "json":
					if !json.Valid([]byte(b.text)) {
						t.Errorf("%s: the block is not valid JSON", where)
					}
				default:
					t.Errorf("%s: unknown mark %q: run, output, policy [FILE], json or skip: why", where, b.mark)
				}
			}
		})
	}
}

// checkOutput runs each "$ command" line of an output block and compares its stdout with the
// lines that follow it, up to the next command. The exit code is not checked (check-url exits 4
// when it denies): the output says what happened.
func checkOutput(t *testing.T, where, dir, text string) {
	t.Helper()
	var cmds []string
	var wants [][]string
	for _, line := range strings.Split(text, "\n") {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			cmds = append(cmds, c)
			wants = append(wants, nil)
			continue
		}
		if len(cmds) == 0 {
			t.Errorf("%s: an output block begins with %q, not with a \"$ \" command", where, line)
			return
		}
		wants[len(wants)-1] = append(wants[len(wants)-1], line)
	}
	for i, c := range cmds {
		out, errOut, err := shell(dir, c)
		got := strings.TrimRight(out, "\n")
		want := strings.TrimRight(strings.Join(wants[i], "\n"), "\n")
		if got != want {
			t.Errorf("%s: $ %s (%v)\n\tgot  %s\n\twant %s\n---- stderr\n%s", where, c, err, got, want, errOut)
		}
	}
}

// snippets are the pieces of a document that are commands: every inline code span of its prose
// and every line of its code blocks.
func snippets(d doc) []string {
	var s []string
	for _, line := range d.prose {
		parts := strings.Split(line, "`")
		for i := 1; i < len(parts); i += 2 {
			s = append(s, parts[i])
		}
	}
	for _, b := range d.blocks {
		s = append(s, strings.Split(b.text, "\n")...)
	}
	return s
}

// helpFlags is each command's flags as "browser-agent COMMAND -h" lists them.
func helpFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out, _ := exec.Command(binary, "help").Output()
	cmdRE := regexp.MustCompile(`(?m)^  ([a-z][a-z-]*) `)
	flagRE := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	cmds := map[string]map[string]bool{}
	for _, m := range cmdRE.FindAllStringSubmatch(string(out), -1) {
		var help bytes.Buffer
		c := exec.Command(binary, m[1], "-h")
		c.Stdout, c.Stderr = &help, &help
		c.Run()
		flags := map[string]bool{"help": true}
		for _, f := range flagRE.FindAllStringSubmatch(help.String(), -1) {
			flags[f[1]] = true
		}
		cmds[m[1]] = flags
	}
	cmds["help"] = map[string]bool{}
	if len(cmds) < 5 {
		t.Fatalf("browser-agent help lists %d commands:\n%s", len(cmds), out)
	}
	return cmds
}

var (
	// invocationRE finds "browser-agent COMMAND" where a command is run.
	invocationRE = regexp.MustCompile(`(?:^|[\s/"'(=])browser-agent\s+([a-z][a-z-]*)`)
	// segmentEnd ends the arguments of one invocation: a comment, the upstream command after "--",
	// a pipe, a list or another invocation.
	segmentEnd = regexp.MustCompile(`\s#|\s--(\s|$)|\||;|&&|browser-agent\s`)
	longFlagRE = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)
)

// TestDocsFlags checks that every "browser-agent COMMAND --flag" in the documents names a command
// and a flag the binary has, and so does a code span that starts with a command's name
// ("serve --recorded-only").
func TestDocsFlags(t *testing.T) {
	cmds := helpFlags(t)
	for _, path := range checkedDocs(t) {
		d := readDoc(t, path)
		for _, s := range snippets(d) {
			if strings.HasPrefix(s, "docker ") {
				continue // browser-agent is the image's name there
			}
			var uses [][2]string // command, its arguments
			for _, m := range invocationRE.FindAllStringSubmatchIndex(s, -1) {
				rest := s[m[1]:]
				if e := segmentEnd.FindStringIndex(rest); e != nil {
					rest = rest[:e[0]]
				}
				uses = append(uses, [2]string{s[m[2]:m[3]], rest})
			}
			if first, rest, ok := strings.Cut(s, " "); ok && cmds[first] != nil && !strings.Contains(s, "browser-agent") {
				if e := segmentEnd.FindStringIndex(rest); e != nil {
					rest = rest[:e[0]]
				}
				uses = append(uses, [2]string{first, rest})
			}
			for _, u := range uses {
				flags, ok := cmds[u[0]]
				if !ok {
					t.Errorf("%s: %q: browser-agent has no command %q", rel(path), s, u[0])
					continue
				}
				for _, f := range longFlagRE.FindAllStringSubmatch(u[1], -1) {
					if !flags[f[1]] {
						t.Errorf("%s: %q: browser-agent %s has no flag --%s", rel(path), s, u[0], f[1])
					}
				}
			}
		}
	}
}

// TestDocsMakeTargets checks that every "make TARGET" in the documents' code is a target of the
// Makefile.
func TestDocsMakeTargets(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(testbrowser.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_-]+)\s*:([^=]|$)`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	makeRE := regexp.MustCompile(`(?:^|[\s;&(])make\s+([a-z][a-z0-9-]*)`)
	for _, path := range checkedDocs(t) {
		for _, s := range snippets(readDoc(t, path)) {
			for _, m := range makeRE.FindAllStringSubmatch(s, -1) {
				if !targets[m[1]] {
					t.Errorf("%s: %q: the Makefile has no target %q", rel(path), s, m[1])
				}
			}
		}
	}
}

// TestDocsPaths checks that every ./path in the documents' code (a Go package, a script, a
// directory) exists in the checkout.
func TestDocsPaths(t *testing.T) {
	root := testbrowser.RepoRoot()
	pathRE := regexp.MustCompile(`(?:^|[\s'"=(])\./([A-Za-z0-9_.][A-Za-z0-9_./-]*)`)
	for _, path := range checkedDocs(t) {
		for _, s := range snippets(readDoc(t, path)) {
			for _, m := range pathRE.FindAllStringSubmatch(s, -1) {
				p := strings.TrimSuffix(strings.TrimSuffix(m[1], "..."), "/")
				if p == "" || p == "." {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s: %q: ./%s does not exist", rel(path), s, p)
				}
			}
		}
	}
}

// TestDocsLinks checks that every relative link of the documents names a file that exists and,
// for a #fragment, a heading of that file.
func TestDocsLinks(t *testing.T) {
	linkRE := regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	for _, path := range checkedDocs(t) {
		d := readDoc(t, path)
		for n, line := range d.prose {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
				}
				where := fmt.Sprintf("%s:%d", rel(path), n+1)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: %v", where, target, err)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
					t.Errorf("%s: link %s: %s has no heading whose anchor is #%s", where, target, rel(dest), frag)
				}
			}
		}
	}
}

// anchors are the fragments GitHub gives the headings of a markdown file: lower case, letters,
// digits, '-' and '_' kept, spaces made '-', the rest dropped; a repeated one gets "-1", "-2", ...
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	a := map[string]bool{}
	seen := map[string]int{}
	for _, line := range readDoc(t, path).prose {
		h, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		h = strings.TrimSpace(strings.TrimLeft(h, "#"))
		var s strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				s.WriteRune('-')
			case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r > 127 && isLetter(r):
				s.WriteRune(r)
			}
		}
		slug := s.String()
		if n := seen[slug]; n > 0 {
			a[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			a[slug] = true
		}
		seen[slug]++
	}
	return a
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }
