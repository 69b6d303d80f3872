package guard_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/mcpguard"
	"github.com/browser-agent/browser-agent/tests/realweb"
)

// The ordinary pages of tests/realweb (pages the web's own tools built: front-end libraries'
// documented set-ups from their npm packages, Python's and PostgreSQL's manuals from Debian's
// packages) through the guard: what share of the texts Playwright MCP's own snapshot gives
// (names and text values, link addresses aside) still reaches the client, and whether the refs
// of the guarded snapshot still work.

// realwebSubset are the pages the test reads over each scheme (BenchmarkGuardRealWeb reads them
// all): widgets, a data table, editors, a map, math, highlighted code and two manuals.
var realwebSubset = []string{
	"/pages/bootstrap5.html", "/pages/react.html", "/pages/vue3.html", "/pages/jquery-ui.html",
	"/pages/datatables.html", "/pages/select2.html", "/pages/highlightjs.html", "/pages/katex.html",
	"/pages/leaflet.html", "/pages/swiper.html",
	"/python/tutorial/introduction.html", "/postgresql/tutorial-join.html",
}

// keptFloor is the share of an unguarded snapshot's texts the guard must pass over the subset:
// measured 86.2% over http and over https (636 of 738) with each text proven by its own element
// (89.6% with the page-wide match before). The rest are texts no person sees drawn where the
// snapshot puts them: an icon button's aria-label, a title tooltip, a carousel's slides off
// screen, a closed select's options, KaTeX's visually hidden MathML (a person sees the
// aria-hidden HTML rendering beside it), a tab panel named by its tab (another element), a
// field's value; and one known loss: a field's drawn text (a placeholder, an input button's
// value) is never proven, as the proof does not read fields. The floor leaves room for the long
// Python page's proof on a loaded machine: with the proof cut at 10 s it lost its second half and
// the share was 69%.
const keptFloor = 0.80

// corpusSite serves the real-web corpus on one origin of scheme, with a policy that reads it and
// the PEM file of its authority ("" over http).
type corpusSite struct{ URL, policy, roots string }

func startCorpusSite(t testing.TB, scheme string) corpusSite {
	t.Helper()
	h := realweb.Handler(t)
	var cs corpusSite
	dir := t.TempDir()
	if scheme == "http" {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		cs.URL = srv.URL
	} else {
		srv, ca := testutil.NewTLSServer(h)
		t.Cleanup(srv.Close)
		cs.URL = srv.URL
		cs.roots = filepath.Join(dir, "roots.pem")
		if err := os.WriteFile(cs.roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cs.policy = filepath.Join(dir, "policy.yaml")
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/\", \"/*\", \"/python/_static/*?{version}\"]\nlimits:\n  max_run_bytes: 4GiB\n  max_page_requests: 10000\n", cs.URL)
	if err := os.WriteFile(cs.policy, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestGuardRealWebHTTP(t *testing.T)  { testGuardRealWeb(t, "http") }
func TestGuardRealWebHTTPS(t *testing.T) { testGuardRealWeb(t, "https") }

// testGuardRealWeb reads the subset through Playwright MCP unguarded and through the guard, and
// holds the share kept to keptFloor; then uses refs of the guarded snapshot on a manual page.
func testGuardRealWeb(t *testing.T, scheme string) {
	cs := startCorpusSite(t, scheme)
	g := guardedBy(t, cs.policy, cs.roots)
	u := unguardedOver(t, scheme == "https")
	var all, kept int
	for _, path := range realwebSubset {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			s := shareKept(g.with(t), u.with(t), cs.URL+path)
			t.Logf("%s %s: %d of %d texts kept (%.1f%%); the guarded snapshot withheld %d of its %d", scheme, path, s.kept, s.all, s.pct(), s.marks, s.guarded)
			for _, x := range s.missing {
				t.Logf("  not kept: %q", x)
			}
			all, kept = all+s.all, kept+s.kept
		})
	}
	share := float64(kept) / float64(max(1, all))
	t.Logf("%s: %d pages, %d of %d snapshot texts kept through the guard (%.1f%%)", scheme, len(realwebSubset), kept, all, 100*share)
	if all == 0 || share < keptFloor {
		t.Errorf("%s: %d of %d snapshot texts kept (%.1f%%), want at least %.0f%%", scheme, kept, all, 100*share, 100*keptFloor)
	}
	t.Run("a link ref of the guarded snapshot navigates", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": cs.URL + "/python/tutorial/introduction.html"})
		snap := pageData(t, g.mustCall("browser_snapshot", nil))
		ref := refOf(t, snap, "link", "4. More Control Flow Tools")
		res := pageData(t, g.mustCall("browser_click", map[string]any{"target": ref, "element": "link"}))
		if !strings.Contains(res, "/python/tutorial/controlflow.html") {
			t.Errorf("a click on the link's ref did not go to controlflow.html:\n%s", res)
		}
	})
	t.Run("the search box of a manual takes text", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": cs.URL + "/python/library/json.html"})
		snap := pageData(t, g.mustCall("browser_snapshot", nil))
		// Its name comes from aria-label and placeholder: the proof does not read a field's
		// drawn text (a placeholder, a button's value), so the name is withheld and the ref kept.
		m := regexp.MustCompile(`- search \[ref=[^\]]*\]:\n\s*- generic \[ref=[^\]]*\]:\n\s*- textbox [^\n]*\[ref=((?:f[0-9]+)?e[0-9]+)\]\n\s*- button [^\n]*\[ref=((?:f[0-9]+)?e[0-9]+)\]`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("no search box in the snapshot:\n%s", snap)
		}
		g.mustCall("browser_type", map[string]any{"target": m[1], "element": "Quick search", "text": "dumps"})
		res := pageData(t, g.mustCall("browser_click", map[string]any{"target": m[2], "element": "Go"}))
		if !strings.Contains(res, "/python/search.html?q=dumps") {
			t.Errorf("typing into the search box and clicking Go did not search:\n%s", res)
		}
	})
}

// share is what the guard kept of one page's snapshot texts.
type share struct {
	all, kept      int      // texts of the unguarded snapshot, and those in the guarded one
	guarded, marks int      // texts of the guarded snapshot, and those it withheld
	missing        []string // the unguarded texts not in the guarded snapshot
}

func (s share) pct() float64 { return 100 * float64(s.kept) / float64(max(1, s.all)) }

// shareKept opens url unguarded (u) and through the guard (g) and compares their snapshots'
// texts, each text counted as often as it appears.
func shareKept(g, u *client, url string) share {
	u.mustCall("browser_navigate", map[string]any{"url": url})
	want := snapEntries(u.mustCall("browser_snapshot", nil))
	g.mustCall("browser_navigate", map[string]any{"url": url})
	got := snapEntries(pageData(g.t, g.mustCall("browser_snapshot", nil)))
	var s share
	have := map[string]int{}
	for _, x := range got {
		have[x]++
		s.guarded++
		if x == mcpguard.HiddenMark {
			s.marks++
		}
	}
	for _, x := range want {
		s.all++
		if have[x] > 0 {
			have[x]--
			s.kept++
		} else {
			s.missing = append(s.missing, x)
		}
	}
	return s
}

// pageData is the page's text in a guarded result (its untrusted_page_data).
func pageData(t testing.TB, res string) string {
	t.Helper()
	_, js, ok := strings.Cut(res, mcpguard.ResultPreface+"\n")
	var m struct {
		Data struct {
			Text string `json:"text"`
		} `json:"untrusted_page_data"`
	}
	if !ok || json.Unmarshal([]byte(js), &m) != nil {
		t.Fatalf("not a guarded result:\n%s", res)
	}
	return m.Data.Text
}

// snapKeyRE is a snapshot line's key: role, name in double quotes (backslash escapes), then
// attributes.
var snapKeyRE = regexp.MustCompile(`^([a-z]+)(?: "((?:[^"\\]|\\.)*)")?((?: \[[^\]]*\])*)(:.*)?$`)

// snapEntries are the texts of a result's snapshot: each element's name and text value, and
// each "- text:" child, decoded from the yaml (link addresses left out).
func snapEntries(text string) []string {
	_, snap, ok := strings.Cut(text, "### Snapshot\n")
	if !ok {
		return nil
	}
	if i := strings.Index(snap, "\n### "); i >= 0 {
		snap = snap[:i]
	}
	var out []string
	for _, l := range strings.Split(snap, "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "- ")
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, "/") {
			// A property: /url is an address, /placeholder a text.
			if v, ok := strings.CutPrefix(rest, "/placeholder: "); ok {
				out = append(out, yamlScalar(v))
			}
			continue
		}
		key, value := rest, ""
		if strings.HasPrefix(rest, "'") {
			// A key yaml quoted: '' is a quote.
			end := 1
			for end < len(rest) && (rest[end] != '\'' || strings.HasPrefix(rest[end:], "''")) {
				if strings.HasPrefix(rest[end:], "''") {
					end++
				}
				end++
			}
			key, value = strings.ReplaceAll(rest[1:min(end, len(rest))], "''", "'"), rest[min(end+1, len(rest)):]
		} else if m := snapKeyRE.FindStringSubmatch(rest); m != nil {
			key, value = strings.TrimSuffix(rest, m[4]), m[4]
		}
		m := snapKeyRE.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		if m[2] != "" {
			out = append(out, strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2]))
		}
		if v, ok := strings.CutPrefix(value, ": "); ok && v != "" {
			out = append(out, yamlScalar(v))
		}
	}
	return out
}

// yamlScalar decodes a plain or double-quoted yaml scalar.
func yamlScalar(v string) string {
	if strings.HasPrefix(v, `"`) {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
	}
	return v
}

// refOf is the ref of the element with role and name in a snapshot text.
func refOf(t testing.TB, snap, role, name string) string {
	t.Helper()
	for _, m := range refLineRE.FindAllStringSubmatch(snap, -1) {
		if m[1] == role && m[2] == name {
			return m[3]
		}
	}
	t.Fatalf("no %s %q in the snapshot:\n%s", role, name, snap)
	return ""
}

// BenchmarkGuardRealWeb reads every page of tests/realweb (the 64 library pages, the 14 manual
// pages) through Playwright MCP unguarded and through the guard, over $REALWEB_SCHEMES (http and
// https unless it names one), and reports the share of the unguarded snapshot's texts kept, per
// page (logged with what was not kept) and overall:
//
//	go test -run '^$' -bench GuardRealWeb -benchtime 1x ./tests/guard/ -v
func BenchmarkGuardRealWeb(b *testing.B) {
	schemes := []string{"http", "https"}
	if s := os.Getenv("REALWEB_SCHEMES"); s != "" {
		schemes = strings.Split(s, ",")
	}
	var paths []string
	for _, n := range realweb.LibraryPages(b) {
		paths = append(paths, "/pages/"+n+".html")
	}
	paths = append(paths, realweb.ManualPages()...)
	for i := 0; i < b.N; i++ {
		for _, scheme := range schemes {
			if scheme != "http" && scheme != "https" {
				b.Fatalf("REALWEB_SCHEMES: %q is neither http nor https", scheme)
			}
			cs := startCorpusSite(b, scheme)
			g, u := guardedBy(b, cs.policy, cs.roots), unguardedOver(b, scheme == "https")
			var all, kept int
			for _, p := range paths {
				s := shareKept(g, u, cs.URL+p)
				b.Logf("%s %s: %d of %d kept (%.1f%%) %q", scheme, p, s.kept, s.all, s.pct(), s.missing)
				all, kept = all+s.all, kept+s.kept
			}
			b.ReportMetric(100*float64(kept)/float64(max(1, all)), scheme+"-kept-%")
			b.Logf("%s: %d pages, %d of %d texts kept (%.1f%%)", scheme, len(paths), kept, all, 100*float64(kept)/float64(max(1, all)))
		}
	}
}
