// Package realweb serves the real-web corpus (README.md): the library pages under /pages/ with
// their npm packages under /lib/, and Python's and PostgreSQL's manuals from Debian's packages
// under /python/ and /postgresql/. The corpus's own tests are in this directory; other suites
// (tests/guard) read the same pages through this package.
package realweb

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// libDir holds the corpus's npm packages (scripts/setup: npm ci in tests/realweb/lib).
func libDir() string {
	return filepath.Join(testbrowser.RepoRoot(), "tests", "realweb", "lib", "node_modules")
}

// pagesDir holds the library pages.
func pagesDir() string { return filepath.Join(testbrowser.RepoRoot(), "tests", "realweb", "pages") }

// LibraryPages are the names of the library pages (pages/NAME.html, served at /pages/NAME.html),
// each with the marker RW-NAME-ok somewhere a person sees it.
func LibraryPages(t testing.TB) []string {
	t.Helper()
	es, err := os.ReadDir(pagesDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if n, ok := strings.CutSuffix(e.Name(), ".html"); ok && !strings.HasSuffix(n, "-fragment") {
			names = append(names, n)
		}
	}
	return names
}

// PythonPages are the ten pages of Python's documentation issue 47 names.
var PythonPages = []string{
	"library/json.html", "library/argparse.html", "library/re.html", "library/functions.html",
	"library/sqlite3.html", "library/pathlib.html", "library/uuid.html", "library/hmac.html",
	"howto/logging.html", "tutorial/introduction.html",
}

// PostgresPages are pages of PostgreSQL's manual (DocBook).
var PostgresPages = []string{"sql-select.html", "datatype-numeric.html", "functions-string.html", "tutorial-join.html"}

// ManualPages are the manual pages' paths on the corpus's origins.
func ManualPages() []string {
	var out []string
	for _, p := range PythonPages {
		out = append(out, "/python/"+p)
	}
	for _, p := range PostgresPages {
		out = append(out, "/postgresql/"+p)
	}
	return out
}

// Handler serves the corpus on one origin: /lib/ the npm packages, /pages/ the library pages,
// /python/ and /postgresql/ the manuals. Python's Sphinx stylesheets carry a cache-busting
// version (pydoctheme.css?2022.1): a policy reading the corpus allows "/python/_static/*?{version}".
func Handler(t testing.TB) http.Handler {
	t.Helper()
	if _, err := os.Stat(filepath.Join(libDir(), "jquery", "package.json")); err != nil {
		t.Fatalf("the corpus's npm packages are missing in %s: run scripts/setup", libDir())
	}
	mux := http.NewServeMux()
	mux.Handle("/lib/", http.StripPrefix("/lib/", http.FileServer(http.Dir(libDir()))))
	mux.Handle("/pages/", http.StripPrefix("/pages/", pageServer{http.FileServer(http.Dir(pagesDir()))}))
	for _, name := range []string{"python", "postgresql"} {
		m := testutil.ManualByName(t, name)
		mux.Handle("/"+name+"/", http.StripPrefix("/"+name+"/", http.FileServer(http.Dir(m.Dir))))
	}
	return mux
}

// A library page's file holds only what is its own: its head's elements, a line "<body>", and
// its body. pageServer serves it in the document every page shares (pageHead, pageTail); any
// other file (a fragment, data) as it is.
type pageServer struct{ files http.Handler }

const (
	pageHead = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	pageTail = "</body></html>\n"
)

func (ps pageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := filepath.Join(pagesDir(), filepath.FromSlash(filepath.Clean("/"+r.URL.Path)))
	b, err := os.ReadFile(name)
	head, body, ok := bytes.Cut(b, []byte("\n<body>\n"))
	if err != nil || !strings.HasSuffix(name, ".html") || !ok {
		ps.files.ServeHTTP(w, r)
		return
	}
	doc := pageHead + string(head) + "\n</head>\n<body>\n" + string(body) + pageTail
	http.ServeContent(w, r, filepath.Base(name), time.Time{}, strings.NewReader(doc))
}
