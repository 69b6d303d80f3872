package adversarial

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testutil"
	"github.com/mxschmitt/playwright-go"
)

// The network, subresource, redirect and URL (route) families again over https: the hostile site
// and the canary are loopback https servers, each with a certificate authority made for it. The
// guarded binary's egress proxy trusts the site's authority (BROWSER_AGENT_UPSTREAM_ROOTS) and its
// Chromium trusts only the proxy's key; the positive control's unguarded Chromium ignores
// certificate errors, so that the hostile pages do reach what they aim at when nothing guards.

// httpsCases are the families run over https as well.
func httpsCases() []*tcase {
	var out []*tcase
	for _, fam := range [][]*tcase{urlCases(), redirectCases(), subresourceCases()} {
		for _, c := range fam {
			out = append(out, overHTTPS(c))
		}
	}
	return out
}

// overHTTPS is c with its site and canary on https. Its pages, script and controls are the same:
// placeholders follow the servers, and every literal http:// and ws:// URL they expand to is
// turned into https:// and wss:// (schemeRewrites).
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
	return []string{"http://", "https://", "ws://", "wss://"}
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
		plainTLS.b, plainTLS.err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
			ExecutablePath: playwright.String("/usr/bin/chromium"),
			Headless:       playwright.Bool(true),
			Args:           append(append([]string{}, plainArgs...), "--ignore-certificate-errors"),
		})
	})
	if plainTLS.err != nil {
		t.Fatalf("unguarded https control browser: %v", plainTLS.err)
	}
	return plainTLS.b
}
