//go:build !nointegration

package proxy_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// httpsWrites are the requests the https write page makes to its own (allowed) origin that must
// never arrive: writes and non-read GETs, made where the browser layer cannot see them.
var httpsWrites = []struct {
	kind, method, path string // path under the site, KEY replaced
}{
	{"beacon", "POST", "/records/KEY/cancel"},         // sendBeacon in pagehide
	{"keepalive-post", "POST", "/records/KEY/remove"}, // keepalive fetches in pagehide
	{"keepalive-put", "PUT", "/records/KEY"},
	{"keepalive-delete", "DELETE", "/records/KEY"},
	{"keepalive-export", "GET", "/admin/export/KEY"},
	{"worker-post", "POST", "/records/KEY/w-post"}, // a dedicated Worker
	{"worker-put", "PUT", "/records/KEY/w-put"},
	{"worker-delete", "DELETE", "/records/KEY/w-delete"},
	{"shared-post", "POST", "/records/KEY/s-post"}, // a SharedWorker
	{"shared-put", "PUT", "/records/KEY/s-put"},
	{"shared-delete", "DELETE", "/records/KEY/s-delete"},
	{"admin-users", "GET", "/admin/users/KEY"}, // a GET to a non-read route
	{"websocket", "GET", "/ws/KEY"},            // a wss:// upgrade
}

const httpsWritePage = `<!doctype html><html><head><title>writes</title></head><body><p>writes</p>
<script>
window.w = new Worker('/p/KEY/worker.js');
try { window.sw = new SharedWorker('/p/KEY/shared.js'); } catch (e) {}
fetch('/admin/users/KEY').catch(() => {});
try { window.ws = new WebSocket('wss://' + location.host + '/ws/KEY'); } catch (e) {}
addEventListener('pagehide', () => {
  navigator.sendBeacon('/records/KEY/cancel', 'x');
  fetch('/records/KEY/remove', { method: 'POST', body: 'x', keepalive: true }).catch(() => {});
  fetch('/records/KEY', { method: 'PUT', body: 'x', keepalive: true }).catch(() => {});
  fetch('/records/KEY', { method: 'DELETE', keepalive: true }).catch(() => {});
  fetch('/admin/export/KEY', { keepalive: true }).catch(() => {});
});
</script></body></html>`

func workerScript(prefix string) string {
	return fmt.Sprintf(`for (const [m, p] of [['POST', '%[1]s-post'], ['PUT', '%[1]s-put'], ['DELETE', '%[1]s-delete']]) {
  fetch('/records/KEY/' + p, { method: m, body: m === 'DELETE' ? undefined : 'x' }).catch(() => {});
}`, prefix)
}

// httpsSite is a loopback https origin with a certificate authority of its own; it counts every
// request that is not a read of /p/ (its mutation counter) per key.
type httpsSite struct {
	*httptest.Server
	ca  *x509.Certificate
	pol *policy.Policy

	mu        sync.Mutex
	mutations map[string][]string // key → "METHOD path"
}

func newHTTPSSite(t *testing.T) *httpsSite {
	t.Helper()
	s := &httpsSite{mutations: map[string][]string{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/")
		if len(parts) >= 4 && parts[1] == "p" && r.Method == http.MethodGet {
			key, file := parts[2], parts[3]
			switch file {
			case "writes.html":
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, strings.ReplaceAll(httpsWritePage, "KEY", key))
			case "worker.js":
				w.Header().Set("Content-Type", "text/javascript")
				fmt.Fprint(w, strings.ReplaceAll(workerScript("w"), "KEY", key))
			case "shared.js":
				w.Header().Set("Content-Type", "text/javascript")
				fmt.Fprint(w, strings.ReplaceAll(workerScript("s"), "KEY", key))
			default:
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html><head><title>plain</title></head><body><p>plain page</p></body></html>")
			}
			return
		}
		for _, wr := range httpsWrites {
			for _, key := range s.keys() {
				if r.URL.Path == strings.ReplaceAll(wr.path, "KEY", key) && r.Method == wr.method {
					s.mu.Lock()
					s.mutations[key] = append(s.mutations[key], wr.kind)
					s.mu.Unlock()
				}
			}
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.WriteHeader(http.StatusNoContent)
	})
	s.Server, s.ca = testutil.NewTLSServer(h)
	t.Cleanup(s.Close)
	var err error
	s.pol, err = policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/p/*\", \"/records/{id}\"]\n", s.URL)), "https.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var siteKeys struct {
	sync.Mutex
	keys []string
}

func (s *httpsSite) newKey() string {
	k := newKey()
	siteKeys.Lock()
	siteKeys.keys = append(siteKeys.keys, k)
	siteKeys.Unlock()
	return k
}

func (s *httpsSite) keys() []string {
	siteKeys.Lock()
	defer siteKeys.Unlock()
	return slices.Clone(siteKeys.keys)
}

// arrived is the write kinds that reached the site for key, sorted and without repeats.
func (s *httpsSite) arrived(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.mutations[key])
	slices.Sort(out)
	return slices.Compact(out)
}

func allWriteKinds() []string {
	var out []string
	for _, w := range httpsWrites {
		out = append(out, w.kind)
	}
	slices.Sort(out)
	return out
}

// unrecorded lists the write kinds for key of which the proxy holds no denial record.
func (s *httpsSite) unrecorded(key string, ds []proxy.Decision) []string {
	var out []string
	for _, w := range httpsWrites {
		path := strings.ReplaceAll(w.path, "KEY", key)
		if !slices.ContainsFunc(ds, func(d proxy.Decision) bool {
			return !d.Allowed() && d.Layer == policy.LayerProxy && d.Method == w.method && d.Origin == s.URL && d.Path == path
		}) {
			out = append(out, w.kind)
		}
	}
	return out
}

// TestHTTPSEgress drives real Chromium at a loopback https site whose page writes where the
// browser layer cannot see: unload beacons and keepalive fetches, Worker and SharedWorker writes,
// a WebSocket upgrade and GETs to non-read routes. Unguarded they all arrive (the positive
// control); through the intercepting proxy, with Chromium trusting only the proxy's key, none
// arrives, each has a denial record of the proxy, and the records are there while the browser
// and the proxy still run.
func TestHTTPSEgress(t *testing.T) {
	site := newHTTPSSite(t)
	pw := drv.Get(t)
	launch := func(t *testing.T, opts playwright.BrowserTypeLaunchOptions, ignoreHTTPSErrors bool) playwright.Page {
		t.Helper()
		return testbrowser.Page(t, pw, opts, playwright.BrowserNewContextOptions{IgnoreHttpsErrors: playwright.Bool(ignoreHTTPSErrors)})
	}
	// visitWrites loads the write page, waits until ready, then navigates on so that the unload
	// requests are sent.
	visitWrites := func(t *testing.T, page playwright.Page, key string, ready func() bool) {
		t.Helper()
		resp, err := page.Goto(site.URL+"/p/"+key+"/writes.html", playwright.PageGotoOptions{Timeout: playwright.Float(15000)})
		if err != nil || resp == nil || resp.Status() != 200 {
			t.Fatalf("the write page did not load over https: %v", err)
		}
		if !testutil.Eventually(15*time.Second, ready) {
			t.Logf("the write page did not make all its live requests in 15 s; navigating on anyway")
		}
		if _, err := page.Goto(site.URL + "/p/" + key + "/next.html"); err != nil {
			t.Logf("goto next: %v", err)
		}
	}
	liveKinds := func(kinds []string) []string {
		return slices.DeleteFunc(kinds, func(k string) bool { return k == "beacon" || strings.HasPrefix(k, "keepalive") })
	}

	t.Run("positive control: unguarded chromium reaches the site with every write", func(t *testing.T) {
		// The site's own key is trusted the way the guarded runs trust the proxy's: Playwright's
		// IgnoreHttpsErrors does not cover SharedWorkers or requests sent after the page is gone.
		leaf, err := x509.ParseCertificate(site.TLS.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
		flag := "--ignore-certificate-errors-spki-list=" + base64.StdEncoding.EncodeToString(sum[:])
		k := site.newKey()
		visitWrites(t, launch(t, playwright.BrowserTypeLaunchOptions{Args: []string{flag}}, false), k, func() bool {
			return len(site.arrived(k)) >= len(liveKinds(allWriteKinds()))
		})
		testutil.Eventually(15*time.Second, func() bool { return len(site.arrived(k)) == len(httpsWrites) })
		if got := site.arrived(k); !slices.Equal(got, allWriteKinds()) {
			t.Fatalf("unguarded: arrived\n\tgot  %q\n\twant %q\nthe guarded case cannot fail for the missing kinds", got, allWriteKinds())
		}
	})

	t.Run("proxy alone denies every write inside the tunnel", func(t *testing.T) {
		p, rec := startRecorded(t, site.pol, proxy.WithUpstreamRoots(site.ca))
		// No IgnoreHttpsErrors: Chromium accepts the proxy's leaves through the SPKI flag alone.
		page := launch(t, throughProxy(p), false)
		k := site.newKey()
		visitWrites(t, page, k, func() bool {
			return len(liveKinds(site.unrecorded(k, rec.all()))) == 0
		})
		// Every write reaches the proxy and is denied there, and is recorded while the tunnels
		// are still open and the browser still runs.
		if !testutil.Eventually(15*time.Second, func() bool { return len(site.unrecorded(k, rec.all())) == 0 }) {
			t.Errorf("no proxy denial recorded for %q; the proxy recorded %q", site.unrecorded(k, rec.all()), describe(rec.all()))
		}
		if got := site.arrived(k); len(got) != 0 {
			t.Errorf("through the proxy: the site's mutation counter got %q, want nothing", got)
		}
		var allowed []string
		for _, d := range rec.all() {
			if d.Allowed() && d.Method != "CONNECT" {
				allowed = append(allowed, d.Method+" "+d.Origin+d.Path)
			}
		}
		if !slices.Contains(allowed, "GET "+site.URL+"/p/"+k+"/writes.html") {
			t.Errorf("the write page itself was not fetched through the intercepted tunnel; allowed %q", allowed)
		}
		for _, a := range allowed {
			if !strings.HasPrefix(a, "GET "+site.URL+"/p/") {
				t.Errorf("proxy allowed %s", a)
			}
		}
	})

	t.Run("bridge with the proxy", func(t *testing.T) {
		p, rec := startRecorded(t, site.pol, proxy.WithUpstreamRoots(site.ca))
		rt, err := bridge.NewRuntime(bridge.WithDriverDir(testbrowser.DriverDir()), bridge.WithChromium(testbrowser.Chromium()))
		if err != nil {
			t.Fatalf("bridge runtime: %v", err)
		}
		defer rt.Close()
		var brec struct {
			sync.Mutex
			ds []bridge.RequestDecision
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s := launchBehind(ctx, t, rt, site.pol, p, bridge.WithProxyRoots(p.RootCAs()), bridge.WithDecisionHook(func(d bridge.RequestDecision) {
			brec.Lock()
			brec.ds = append(brec.ds, d)
			brec.Unlock()
		}))
		defer s.Close()
		k := site.newKey()
		if _, err := s.Open(ctx, site.URL+"/p/"+k+"/writes.html"); err != nil {
			t.Fatalf("Open(writes) over https: %v", err)
		}
		// A write is denied by one layer or the other: the route sees what the page sends while
		// it lives, the proxy what is sent where the route cannot see. Some are never sent
		// behind the bridge; nothing may arrive.
		denied := func() []string {
			var out []string
			brec.Lock()
			bds := slices.Clone(brec.ds)
			brec.Unlock()
			unrec := site.unrecorded(k, rec.all())
			for _, w := range httpsWrites {
				if !slices.Contains(unrec, w.kind) || slices.ContainsFunc(bds, func(d bridge.RequestDecision) bool {
					return d.Verdict == policy.Deny && strings.HasSuffix(d.URL(), strings.ReplaceAll(w.path, "KEY", k))
				}) {
					out = append(out, w.kind)
				}
			}
			slices.Sort(out)
			return out
		}
		testutil.Eventually(15*time.Second, func() bool { return len(denied()) >= len(liveKinds(allWriteKinds())) })
		if _, err := s.Open(ctx, site.URL+"/p/"+k+"/next.html"); err != nil {
			t.Fatalf("Open(next): %v", err)
		}
		if !testutil.Eventually(5*time.Second, func() bool { return len(denied()) == len(httpsWrites) }) {
			t.Logf("neither layer recorded %q (behind the bridge the page did not send them)",
				slices.DeleteFunc(allWriteKinds(), func(k string) bool { return slices.Contains(denied(), k) }))
		}
		if got := site.arrived(k); len(got) != 0 {
			t.Errorf("bridge with the proxy: the site's mutation counter got %q, want nothing", got)
		}
	})
}
