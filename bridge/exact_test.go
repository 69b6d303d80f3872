package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// TestFetchExactPath: the fetcher sends the canonical path and query the policy decided, byte for
// byte, directly and through the egress proxy, over http and over https (intercepted by the
// proxy, whose authority is the only one the fetcher trusts).
func TestFetchExactPath(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(h)
	defer tlsSrv.Close()
	routes := `read: ["/records/{id}", "/r/*", "/r/*?q={q}&r={r}"]`
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    %s\n  - origin: %s\n    %s\n", plain.URL, routes, tlsSrv.URL, routes)), "exact.yaml")
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.Start(context.Background(), pol, proxy.WithUpstreamRoots(tlsSrv.Certificate()))
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	user, pass := px.Credentials()

	paths := []string{
		"/records/..admin|", // no %2F: a route parameter never holds an encoded slash (issue 11)
		"/records/a^b%7Cc",
		"/r/%C3%A9t%C3%A9/x|y?q=a|b^c&r=%2F%7C",
		"/r/caf%C3%A9?",
	}
	type via struct {
		name string
		opts []Option
		base string
	}
	for _, v := range []via{
		{"http direct", nil, plain.URL},
		{"http through the proxy", []Option{WithProxy(px.Server(), user, pass)}, plain.URL},
		{"https through the intercepting proxy", []Option{WithProxy(px.Server(), user, pass), WithProxyRoots(px.RootCAs())}, tlsSrv.URL},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := defaultConfig()
			for _, o := range v.opts {
				o(&cfg)
			}
			f, err := newFetcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer f.close()
			for _, p := range paths {
				d, err := pol.Decide(policy.DecideArgs{Method: "GET", URL: v.base + p})
				if err != nil || !d.Allowed() {
					t.Fatalf("policy denies %s: %+v %v", p, d, err)
				}
				want := d.URL[len(v.base):]
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				resp, err := f.do(ctxT(t), "GET", d.URL, nil)
				if err != nil {
					t.Fatalf("GET %s: %v", d.URL, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				got := seen[n:]
				mu.Unlock()
				if len(got) != 1 || got[0] != want {
					t.Errorf("GET %s\n\tgot  %q\n\twant %q", d.URL, got, want)
				}
			}
		})
	}

	t.Run("https without the proxy's authority fails", func(t *testing.T) {
		cfg := defaultConfig()
		WithProxy(px.Server(), user, pass)(&cfg)
		f, err := newFetcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.close()
		if _, err := f.do(ctxT(t), "GET", tlsSrv.URL+"/records/1", nil); err == nil {
			t.Errorf("the fetcher trusted the proxy's leaf without WithProxyRoots")
		}
	})

	t.Run("an upstream certificate error names the host", func(t *testing.T) {
		strict, err := proxy.Start(context.Background(), pol) // no extra roots
		if err != nil {
			t.Fatal(err)
		}
		defer strict.Close()
		u, p := strict.Credentials()
		cfg := defaultConfig()
		WithProxy(strict.Server(), u, p)(&cfg)
		WithProxyRoots(strict.RootCAs())(&cfg)
		f, err := newFetcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.close()
		_, err = f.do(ctxT(t), "GET", tlsSrv.URL+"/records/1", nil)
		host := tlsSrv.Listener.Addr().String()
		var ee *EgressError
		if !errors.As(err, &ee) || ee.Reason != proxy.ReasonUpstreamCert || ee.Host != host {
			t.Errorf("GET with an unverifiable upstream\n\tgot  %v\n\twant an EgressError %q naming %s", err, proxy.ReasonUpstreamCert, host)
		}
	})
}
