package adversarial

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// The network, subresource, redirect and URL (route) families again over https: the hostile site
// and the canary are loopback https servers, each with a certificate authority made for it. The
// guarded binary's egress proxy trusts the site's authority (BROWSER_AGENT_UPSTREAM_ROOTS) and its
// Chromium trusts only the proxy's key; the positive control's unguarded Chromium ignores
// certificate errors, so that the hostile pages do reach what they aim at when nothing guards.

// httpsCases are the families run over https as well. The URL family is not: each of its cases is
// a URL the policy denies before any request, so over https it would never reach TLS;
// TestURLCasesDeniedOverHTTPS holds each of them, rewritten to https, to the same denial.
func httpsCases() []*tcase {
	var out []*tcase
	for _, fam := range [][]*tcase{redirectCases(), subresourceCases()} {
		for _, c := range fam {
			out = append(out, overHTTPS(c))
		}
	}
	out = append(out, visibilityHTTPSCases()...)
	for _, c := range unicodeCases() {
		if strings.Contains(c.Name, "tag sentence after") || strings.Contains(c.Name, "bits") || strings.Contains(c.Name, "override") {
			out = append(out, overHTTPS(c))
		}
	}
	for _, c := range append(fontCases(), scrollerCases()...) {
		out = append(out, overHTTPS(c))
	}
	return append(out, tlsCases()...)
}

// httpsWritePage writes to its own https origin where the browser layer cannot see: while it
// unloads (a beacon, keepalive fetches), from a Worker and a SharedWorker, a wss:// upgrade and
// GETs to non-read routes. The script opens it, then opens a record, which unloads it.
const httpsWritePage = `<p>Record page.</p><script>
const wr = "for (const m of ['POST','PUT','DELETE']) fetch('/records/SYN-0042', {method: m, body: m === 'DELETE' ? undefined : 'status=closed'}).catch(() => {});";
window.w = new Worker(URL.createObjectURL(new Blob([wr], {type: 'text/javascript'})));
try { window.sw = new SharedWorker(URL.createObjectURL(new Blob([wr], {type: 'text/javascript'}))); } catch (e) {}
fetch('/admin/users').catch(() => {});
try { window.ws = new WebSocket('wss://' + location.host + '/records/SYN-0042/update'); } catch (e) {}
addEventListener('pagehide', () => {
  navigator.sendBeacon('/records/SYN-0042/cancel', 'x');
  fetch('/records/SYN-0042/remove', {method: 'POST', body: 'x', keepalive: true}).catch(() => {});
  fetch('/records/SYN-0042', {method: 'PUT', body: 'x', keepalive: true}).catch(() => {});
  fetch('/records/SYN-0042', {method: 'DELETE', keepalive: true}).catch(() => {});
  fetch('/admin/export?delete=1', {keepalive: true}).catch(() => {});
});
</script>`

// tlsCases are the cases that only https has.
func tlsCases() []*tcase {
	writes := &tcase{Name: "writes where the browser layer cannot see", Family: "https", HTTPS: true,
		Pages: map[string]page{"/p/start": html(httpsWritePage)},
		Steps: []string{open("{site}/p/start"), read, open("{site}/records/SYN-0042"), read, cannot},
		Wait:  1e9,
	}
	// The proxy is not given the site's authority: its certificate does not verify. The naive
	// check it replaces is a client that skips verification, and reads the page.
	cert := &tcase{Name: "upstream certificate not verified", Family: "https", HTTPS: true, NoReach: true,
		Env:   []string{"BROWSER_AGENT_UPSTREAM_ROOTS="},
		Steps: []string{open("{site}/records/SYN-0042"), read, cannot},
		Control: func(x *ctl) {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, err := c.Get(x.e.Site + "/records/SYN-0042")
			if err != nil {
				x.t.Logf("naive client: %v", err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				x.fool("a client that skips verification read the site")
			}
		},
		Check: func(e *env, g guarded) error {
			host := "127.0.0.1:" + e.SitePort
			for _, s := range []string{g.res.Reason, g.transc} {
				if strings.Contains(s, "upstream certificate not verified") && strings.Contains(s, host) {
					if e.siteHits.Load() != 0 {
						return fmt.Errorf("the site served %d requests to an unverified connection", e.siteHits.Load())
					}
					return nil
				}
			}
			return fmt.Errorf("no reason naming the unverified certificate of %s: %s: %s", host, g.res.Status, g.res.Reason)
		},
	}
	hidden := &tcase{Name: "keepalive write-word GET when the page is hidden", Family: "https", HTTPS: true,
		Pages: map[string]page{"/p/start": html(`<p>Record page.</p><script>
document.addEventListener('visibilitychange', () => {
  fetch('/records/SYN-0042?action=delete', {keepalive: true}).catch(() => {});
  navigator.sendBeacon('/records/SYN-0042/confirm', 'x');
});</script>`)},
		Steps: []string{open("{site}/p/start"), read, open("{site}/records/SYN-0042"), read, cannot},
	}
	return []*tcase{writes, cert, hidden}
}

// overHTTPS is c with its site and canary on https. Its pages, script and controls are the same:
// placeholders follow the servers, and every literal http:// and ws:// URL they expand to is
// turned into https:// and wss:// (schemeRewrites; http:\\host forms included).
func overHTTPS(c *tcase) *tcase {
	h := *c
	h.Name = c.Name + " (https)"
	h.HTTPS = true
	return &h
}

// schemeRewrites are the replacements an https case adds to the placeholders' expansion.
func schemeRewrites(c *tcase) []string {
	if !c.HTTPS {
		return nil
	}
	return []string{"http:", "https:", "ws://", "wss://"} // "http:" also catches http:\\host
}

// servers starts the canary and the site: plain http, or for an https case https servers with
// authorities of their own, the site's written to rootsFile for the guarded binary.
func (e *env) servers(canary, site http.Handler) (*httptest.Server, *httptest.Server) {
	if !e.c.HTTPS {
		return httptest.NewServer(canary), httptest.NewServer(site)
	}
	c, _ := testutil.NewTLSServer(canary)
	s, ca := testutil.NewTLSServer(site)
	e.rootsFile = filepath.Join(e.dir, "upstream-roots.pem")
	if err := os.WriteFile(e.rootsFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return c, s
}

func wsScheme(c *tcase) string {
	if c.HTTPS {
		return "wss"
	}
	return "ws"
}

var plainTLS struct {
	once sync.Once
	b    playwright.Browser
	err  error
}

// controlBrowser is the unguarded browser of a positive control: the shared one, or for an https
// case a second one that ignores certificate errors (Playwright's per-context IgnoreHttpsErrors
// does not cover workers or requests sent while a page unloads).
func controlBrowser(t *testing.T, c *tcase) playwright.Browser {
	if !c.HTTPS {
		return plain
	}
	plainTLS.once.Do(func() {
		plainTLS.b, plainTLS.err = testbrowser.Launch(pw, playwright.BrowserTypeLaunchOptions{
			Args: append(append([]string{}, plainArgs...), "--ignore-certificate-errors"),
		})
	})
	if plainTLS.err != nil {
		t.Fatalf("unguarded https control browser: %v", plainTLS.err)
	}
	return plainTLS.b
}

// TestURLCasesDeniedOverHTTPS is the URL family over https without a browser: every URL a case
// opens after the record page, rewritten to https as overHTTPS rewrites it, gets from the case's
// https policy the denial (same reason) that the http URL gets from the http policy. A denied
// open_url is never requested, so the https copy of the case could prove nothing the http run and
// this do not.
func TestURLCasesDeniedOverHTTPS(t *testing.T) {
	for _, c := range urlCases() {
		decide := func(c *tcase) policy.Decision {
			e := newEnv(t, c)
			pol, err := policy.Parse([]byte(e.policyYAML()), "case policy")
			if err != nil {
				t.Fatal(err)
			}
			var st struct{ Steps []scriptStep }
			if err := json.Unmarshal([]byte(e.script()), &st); err != nil {
				t.Fatal(err)
			}
			var a struct{ URL string }
			json.Unmarshal(st.Steps[1].Args, &a)
			d, err := pol.Decide(policy.DecideArgs{URL: a.URL, Base: e.Site + "/records/SYN-0042"})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		plain, tls := decide(c), decide(overHTTPS(c))
		if tls.Verdict != policy.Deny || plain.Verdict != policy.Deny || tls.Reason != plain.Reason {
			t.Errorf("%s: over http %v (%s), over https %v (%s): want the same denial", c.Name, plain.Verdict, plain.Reason, tls.Verdict, tls.Reason)
		}
	}
}
