package testutil

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// Manual is a documentation tree that a Debian package installs: pages the web's own tools built
// (Sphinx, DocBook, SQLite's generator), none written here. scripts/setup installs each package,
// so that the suites that read real pages find them on a fresh machine.
type Manual struct {
	Name    string // short name: postgresql, python, sqlite
	Package string // the Debian package that installs it
	Dir     string // the folder of its HTML pages
}

// Manuals are the real manuals the suites read.
var Manuals = []Manual{
	{Name: "postgresql", Package: "postgresql-doc-15", Dir: "/usr/share/doc/postgresql-doc-15/html"},
	{Name: "python", Package: "python3.11-doc", Dir: "/usr/share/doc/python3.11/html"},
	{Name: "sqlite", Package: "sqlite3-doc", Dir: "/usr/share/doc/sqlite3"},
}

// ManualByName is the manual named name; the test fails when there is none by that name or its
// folder is missing (scripts/setup installs it).
func ManualByName(t testing.TB, name string) Manual {
	t.Helper()
	for _, m := range Manuals {
		if m.Name == name {
			if _, err := os.Stat(filepath.Join(m.Dir)); err != nil {
				t.Fatalf("manual %s missing at %s: run scripts/setup (it installs Debian's %s)", m.Name, m.Dir, m.Package)
			}
			return m
		}
	}
	t.Fatalf("no manual named %q", name)
	return Manual{}
}

// ServeDir serves the files under dir over http and https on 127.0.0.1 (symlinks followed, as
// Debian's doc packages link their jQuery and fonts from /usr/share/javascript), and returns both
// servers and the https server's own authority (see NewTLSServer). Both close at the end of the
// test.
func ServeDir(t testing.TB, dir string) (plain, secure *httptest.Server, ca *x509.Certificate) {
	t.Helper()
	h := http.FileServer(http.Dir(dir))
	plain = httptest.NewServer(h)
	secure, ca = NewTLSServer(h)
	t.Cleanup(func() {
		plain.Close()
		secure.Close()
	})
	return plain, secure, ca
}
