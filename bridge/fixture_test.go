package bridge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// Loopback fixture servers. Every request is counted under the scenario key ("k" and 8 digits)
// found in its URL, so that parallel tests share the servers but not their counters.
//
//   - site:   the allowed origin. Serves testdata/*.html as templates under /p/{key}/{file},
//     redirect chains under /hop, /loop and /go, and counts mutations: any request that is not
//     GET/HEAD, or whose path holds a write word (e.g. /records/{key}/delete).
//   - other:  a second allowed origin on "localhost" (a different site from 127.0.0.1, so its
//     frames are out-of-process iframes), serving the same files.
//   - canary: a host:port the policy does not allow. Every request to it is a leak.

var keyRE = regexp.MustCompile(`k\d{8}`)

func newKey() string { return fmt.Sprintf("k%08d", rand.IntN(100000000)) }

// counter counts requests per scenario key.
type counter struct {
	mu        sync.Mutex
	hits      map[string]int
	mutations map[string]int
	paths     map[string][]string
	total     int
}

func newCounter() *counter {
	return &counter{hits: map[string]int{}, mutations: map[string]int{}, paths: map[string][]string{}}
}

var writePathRE = regexp.MustCompile(`(?i)/(delete|remove|edit|update|destroy)(/|$|\?)`)

func (c *counter) count(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	u := r.URL.String()
	if r.Method == http.MethodConnect {
		u = r.Host
	}
	keys := keyRE.FindAllString(u, -1)
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		c.hits[k]++
		c.paths[k] = append(c.paths[k], r.Method+" "+r.URL.Path)
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || writePathRE.MatchString(r.URL.Path) {
			c.mutations[k]++
		}
	}
}

func (c *counter) Hits(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[key]
}

func (c *counter) Mutations(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mutations[key]
}

func (c *counter) Paths(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths[key]...)
}

func (c *counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// fixture is the package's set of servers and the policy that allows site and other.
type fixture struct {
	site, other, canary    *httptest.Server
	siteN, otherN, canaryN *counter
	Site, Other, Canary    string // origins
	pol                    *policy.Policy
	policyYAML             string
	pages                  *template.Template
}

func newFixture() (*fixture, error) {
	f := &fixture{siteN: newCounter(), otherN: newCounter(), canaryN: newCounter()}
	tmpl, err := template.ParseGlob(filepath.Join("testdata", "*.html"))
	if err != nil {
		return nil, err
	}
	f.pages = tmpl
	f.canary = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.canaryN.count(r)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch {
		case strings.HasSuffix(r.URL.Path, ".css"):
			w.Header().Set("Content-Type", "text/css")
		case strings.HasSuffix(r.URL.Path, ".js"):
			w.Header().Set("Content-Type", "text/javascript")
		case strings.Contains(r.URL.Path, "/sse"):
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: hi\n\n")
			return
		default:
			w.Header().Set("Content-Type", "text/html")
		}
		fmt.Fprint(w, "<p>canary reached</p>")
	}))
	f.site = httptest.NewServer(f.handler(f.siteN, false))
	// other listens on 127.0.0.1 but is addressed as localhost: another site.
	f.other = httptest.NewServer(f.handler(f.otherN, true))
	f.Site = f.site.URL
	f.Canary = f.canary.URL
	f.Other = strings.Replace(f.other.URL, "127.0.0.1", "localhost", 1)
	f.policyYAML = fmt.Sprintf(`version: 1
sites:
  - origin: %s
    read: ["/", "/p/*", "/hop/*", "/loop/*", "/go/*", "/static/*", "/api/*", "/records/{id}", "/big/*",
      # the query parameters the fixture pages use: a route accepts no others (issue 11)
      "/p/*?v={v}&i={i}&late={l}&refresh={r}&secret={s}&udp={u}&x={x}&cross={c}", "/hop/*?code={c}", "/big/*?lines={n}&i={i}",
      # values that read as a write word's stem ("closed"), written by the policy itself
      "/p/*?v=closed-shadow", "/p/*?v=cross-closed-shadow"]
  - origin: %s
    read: ["/p/*", "/p/*?v={v}&cross={c}", "/p/*?v=closed-shadow"]
limits:
  max_redirect_hops: 5
`, f.Site, f.Other)
	if f.pol, err = policy.Parse([]byte(f.policyYAML), "fixture"); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fixture) Close() {
	f.site.Close()
	f.other.Close()
	f.canary.Close()
}

// pageData is what a testdata template sees.
// pageBodies holds page bodies registered by key (visURL), served as .Q.body under /p/{key}/.
var pageBodies sync.Map

type pageData struct {
	Site, Other, Canary, Key, Key2, Self string
	Q                                    map[string]string
}

func (f *fixture) handler(n *counter, other bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/p/{key}/{file}", func(w http.ResponseWriter, r *http.Request) {
		key, file := r.PathValue("key"), r.PathValue("file")
		switch r.URL.Query().Get("refresh") {
		case "canary":
			w.Header().Set("Refresh", "0; url="+f.Canary+"/c/"+key+"/refresh-header")
		case "mut":
			w.Header().Set("Refresh", "0;url=/records/"+key+"/delete")
		case "local":
			w.Header().Set("Refresh", "0; url=/p/"+key2(key)+"/basic.html")
		}
		q := map[string]string{}
		for k, v := range r.URL.Query() {
			q[k] = v[0]
		}
		if body, ok := pageBodies.Load(key); ok {
			q["body"] = body.(string)
		}
		data := pageData{Site: f.Site, Other: f.Other, Canary: f.Canary, Key: key, Key2: key2(key), Self: f.Site, Q: q}
		if other {
			data.Self = f.Other
		}
		var b bytes.Buffer
		if err := f.pages.ExecuteTemplate(&b, file, data); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		ct := "text/html; charset=utf-8"
		if strings.HasSuffix(file, ".js") {
			ct = "text/javascript"
		}
		w.Header().Set("Content-Type", ct)
		w.Write(b.Bytes())
	})
	// /static/fonts/{key}: a font registered by key (fontFiles, fonts_test.go).
	mux.HandleFunc("/static/fonts/{key}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := fontFiles.Load(r.PathValue("key"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "font/ttf")
		w.Write(b.([]byte))
	})
	// /hop/{key}/{n}: n more hops to /hop/{key}/0, the final page.
	mux.HandleFunc("/hop/{key}/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n > 0 {
			code := http.StatusFound
			if c := r.URL.Query().Get("code"); c != "" {
				code, _ = strconv.Atoi(c)
			}
			loc := fmt.Sprintf("/hop/%s/%d", r.PathValue("key"), n-1)
			if c := r.URL.Query().Get("code"); c != "" {
				loc += "?code=" + c
			}
			http.Redirect(w, r, loc, code)
			return
		}
		fmt.Fprintf(w, "<html><head><title>Final</title></head><body><h1>Final page %s</h1></body></html>", r.PathValue("key"))
	})
	mux.HandleFunc("/loop/{key}/{step}", func(w http.ResponseWriter, r *http.Request) {
		next := "b"
		if r.PathValue("step") == "b" {
			next = "a"
		}
		http.Redirect(w, r, "/loop/"+r.PathValue("key")+"/"+next, http.StatusFound)
	})
	// /go/{key}/{name}: named redirects.
	mux.HandleFunc("/go/{key}/{name}", func(w http.ResponseWriter, r *http.Request) {
		k := r.PathValue("key")
		to := map[string]struct {
			loc  string
			code int
		}{
			"offsite":   {f.Canary + "/c/" + k + "/offsite", http.StatusFound},
			"chain-mut": {"/go/" + k + "/w1", http.StatusFound},
			"w1":        {"/go/" + k + "/w2", http.StatusMovedPermanently},
			"w2":        {"/records/" + k + "/delete", http.StatusSeeOther},
			"t307":      {f.Canary + "/c/" + k + "/t307", http.StatusTemporaryRedirect},
			"t308":      {"/records/" + k + "/delete", http.StatusPermanentRedirect},
			"offsite2":  {"/go/" + k + "/offsite", http.StatusFound},
			"noloc":     {"", http.StatusFound},
		}[r.PathValue("name")]
		if to.code == 0 {
			http.NotFound(w, r)
			return
		}
		if to.loc != "" {
			w.Header().Set("Location", to.loc)
		}
		w.WriteHeader(to.code)
	})
	mux.HandleFunc("/big/{key}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if n, _ := strconv.Atoi(r.URL.Query().Get("lines")); n > 0 {
			fmt.Fprint(w, "<html><body>")
			for i := 1; i <= n; i++ {
				fmt.Fprintf(w, "<p>line-%05d the quick brown fox jumps over the lazy dog, ünïcödé ✓</p>\n", i)
			}
			fmt.Fprint(w, "</body></html>")
			return
		}
		fmt.Fprint(w, "<html><body><p>BIG-START</p><pre>")
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < 20000; i++ { // 2 MB
			fmt.Fprint(w, line)
		}
		fmt.Fprint(w, "</pre><p>BIG-END</p></body></html>")
	})
	// /api/{key}/wait/{ms} answers after ms milliseconds (at most 5 s).
	mux.HandleFunc("/api/{key}/wait/{ms}", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.PathValue("ms"))
		select {
		case <-time.After(time.Duration(min(ms, 5000)) * time.Millisecond):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/api/{key}/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(20 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "<p>slow</p>")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch {
		case strings.HasSuffix(r.URL.Path, ".js"):
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, "self.addEventListener('install', () => {});")
		case strings.HasSuffix(r.URL.Path, ".css"):
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, "body{}")
		case strings.HasSuffix(r.URL.Path, ".bin"):
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", "attachment; filename=x.bin")
			fmt.Fprint(w, "\x00\x01binary")
		default:
			fmt.Fprintf(w, "<p>site %s</p>", r.URL.Path)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.count(r)
		mux.ServeHTTP(w, r)
	})
}

// key2 derives a second key from a key: for "allowed, but not started by the bridge" targets.
func key2(k string) string {
	d, _ := strconv.Atoi(k[1:])
	return fmt.Sprintf("k%08d", (d+50000000)%100000000)
}

// udpCanary counts UDP datagrams (STUN binding requests of WebRTC ICE gathering).
type udpCanary struct {
	conn *net.UDPConn
	mu   sync.Mutex
	n    int
}

func newUDPCanary() (*udpCanary, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	u := &udpCanary{conn: c}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFromUDP(buf); err != nil {
				return
			}
			u.mu.Lock()
			u.n++
			u.mu.Unlock()
		}
	}()
	return u, nil
}

func (u *udpCanary) Port() int { return u.conn.LocalAddr().(*net.UDPAddr).Port }
func (u *udpCanary) Count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}
func (u *udpCanary) Close() { u.conn.Close() }

// settle waits for requests a page makes after load (timers, refreshes, beacons) to arrive.
func settle() { time.Sleep(700 * time.Millisecond) }

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
