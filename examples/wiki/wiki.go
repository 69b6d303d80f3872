// Package wiki is an example of a site shape other than the demo's: a small wiki of lighthouses
// served from local files (site/), with an article per record, infobox tables, a search page and
// its own identifier scheme (WK-LH-017). policy.yaml is its policy. The test runs the offline
// planner and a script model against it through the guarded browser, over http and https.
//
// Serve it with: go run ./examples/wiki/cmd/wiki (it prints its address), then
// browser-agent run --policy examples/wiki/policy.yaml --task "Look up WK-LH-017".
package wiki

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
)

//go:embed site policy.yaml
var files embed.FS

// policyOrigin is the origin policy.yaml is written for.
const policyOrigin = "http://127.0.0.1:8082"

// PolicyYAML returns the wiki's policy for the wiki served at origin.
func PolicyYAML(origin string) []byte {
	b, _ := files.ReadFile("policy.yaml")
	return bytes.ReplaceAll(b, []byte(policyOrigin), []byte(strings.TrimRight(origin, "/")))
}

// Handler serves the wiki: / (the index), /wiki/{title} (an article file) and /search?q= (the
// articles whose text holds q, case folded). Everything else is 404. It only reads.
func Handler() http.Handler {
	site, _ := fs.Sub(files, "site")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveFile(w, site, "index.html") })
	mux.HandleFunc("GET /wiki/{title}", func(w http.ResponseWriter, r *http.Request) {
		title := r.PathValue("title")
		if !reTitle.MatchString(title) {
			http.NotFound(w, r)
			return
		}
		serveFile(w, site, "wiki/"+title+".html")
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) { search(w, r, site) })
	return mux
}

var (
	reTitle    = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	reTitleTag = regexp.MustCompile(`<title>([^<]*)</title>`)
	reTags     = regexp.MustCompile(`<[^>]*>`)
)

func serveFile(w http.ResponseWriter, site fs.FS, name string) {
	b, err := fs.ReadFile(site, name)
	if err != nil {
		http.Error(w, "no such page", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}

// hit is one search result: the article's path, its title and the wiki ID its text names.
type hit struct{ Path, Title, ID string }

var (
	reID    = regexp.MustCompile(`WK-[A-Z]{2}-\d{3}`)
	results = template.Must(template.New("search").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Search – Lighthouse Wiki</title></head>
<body><h1>Search</h1>
{{if .Hits}}<ul class="results">{{range .Hits}}<li><a href="{{.Path}}">{{.Title}}{{if .ID}} ({{.ID}}){{end}}</a></li>
{{end}}</ul>{{else}}<p>No article matches “{{.Q}}”.</p>{{end}}
</body></html>`))
)

// search lists the articles whose visible words hold q (case folded), each with the first wiki ID
// its text names.
func search(w http.ResponseWriter, r *http.Request, site fs.FS) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var hits []hit
	names, _ := fs.Glob(site, "wiki/*.html")
	slices.Sort(names)
	for _, name := range names {
		b, _ := fs.ReadFile(site, name)
		text := reTags.ReplaceAllString(string(b), " ")
		if q == "" || !strings.Contains(strings.ToLower(text), strings.ToLower(q)) {
			continue
		}
		title := strings.TrimSuffix(path.Base(name), ".html")
		if m := reTitleTag.FindSubmatch(b); m != nil {
			title, _, _ = strings.Cut(string(m[1]), " – ")
		}
		// The ID a result names is the one its article is about: the first in its text.
		hits = append(hits, hit{Path: "/wiki/" + strings.TrimSuffix(path.Base(name), ".html"), Title: title, ID: reID.FindString(text)})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	results.Execute(w, struct {
		Q    string
		Hits []hit
	}{q, hits})
}
