package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/browser-agent/browser-agent"

// layers places every package of the module (its path below the module root); see doc.go. A
// package imports only packages of a lower layer.
var layers = map[string]int{
	"policy": 0, "internal/layering": 0, "internal/startup": 0, "internal/testkit/testutil": 0, "internal/invisible": 0, "internal/procs": 0, "internal/countio": 0, "internal/wall": 0, "internal/testkit/pgtest": 0, "extension": 0,
	"bridge/internal/readerjs": 0, "bridge/internal/pixels": 0,
	"browse":                 1,
	"bridge/internal/budget": 2, "bridge/internal/fetch": 2,
	"bridge/internal/genreader": 3,
	"bridge":                    3, "proxy": 3, "audit": 3,
	"coordinator": 4, "internal/testkit/browsertest": 4, "internal/testkit/testbrowser": 4, "internal/queue": 4, "web/internal/demostate": 4,
	"coordinator/offline": 5, "internal/testkit/chattest": 5, "coordinator/openai": 5, "internal/guarded": 5, "runner": 5,
	"web": 6, "mcpserver": 6, "mcpguard": 6, "demo-site": 6, "demo-site/presets": 6,
	"internal/cli":      7,
	"cmd/browser-agent": 8, "cmd/demo-site": 8, "bench": 8, "bench/plaincold": 8, "examples/wiki": 8,
	"tests": 8, "tests/adversarial": 8, "tests/faults": 8, "tests/guard": 8, "tests/mcp": 8, "tests/queue": 8, "tests/realweb": 8,
	"examples/wiki/cmd/wiki": 9,
}

// TestImportsGoDown fails when a package imports a package of its own layer or of a higher one,
// or when a package is in no layer.
func TestImportsGoDown(t *testing.T) {
	imports := moduleImports(t, filepath.Join("..", ".."))
	if len(imports) < len(layers)/2 {
		t.Fatalf("found %d packages; is the module root ../..?", len(imports))
	}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		lp, ok := layers[p]
		if !ok {
			t.Errorf("%s is in no layer: place it in internal/layering (doc.go and layers)", p)
			continue
		}
		for _, imp := range imports[p] {
			li, ok := layers[imp]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", p, imp)
			case li >= lp:
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers (internal/layering/doc.go)", p, lp, imp, li)
			}
		}
	}
	for p := range layers {
		if _, ok := imports[p]; !ok {
			t.Errorf("layers names %s, which has no Go files: drop it", p)
		}
	}
}

// moduleImports parses the import clauses of every non-test Go file below root (whatever its
// build constraints) and returns, for each package (a directory with Go files, tests included),
// the module's packages its non-test files import, as paths below the module root.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules" || n == "driver") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil // a package of tests only (tests/...) is in a layer too
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(imp, module+"/"); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	return out
}

// TestCoordinatorKnowsNoBrowser fails when the coordinator depends, directly or through any
// package it imports, on the bridge: it speaks browse's vocabulary, and the bridge adapts to it.
func TestCoordinatorKnowsNoBrowser(t *testing.T) {
	imports := moduleImports(t, filepath.Join("..", ".."))
	seen := map[string]string{"coordinator": ""}
	todo := []string{"coordinator"}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		for _, imp := range imports[p] {
			if _, ok := seen[imp]; !ok {
				seen[imp] = p
				todo = append(todo, imp)
			}
		}
	}
	for p, by := range seen {
		if p == "bridge" || strings.HasPrefix(p, "bridge/") {
			t.Errorf("coordinator depends on %s (imported by %s): it must speak package browse's vocabulary, not the bridge's", p, by)
		}
	}
	if _, ok := seen["browse"]; !ok {
		t.Errorf("coordinator does not depend on browse: is the module root ../..?")
	}
}
