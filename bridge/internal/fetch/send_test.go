package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/browse"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSendFollowsNoRedirect: a redirect is returned as it is, for the bridge to decide its
// Location; the Location is never requested.
func TestSendFollowsNoRedirect(t *testing.T) {
	var hops []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops = append(hops, r.URL.Path)
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Send(ctxT(t), http.MethodGet, srv.URL+"/start", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || len(hops) != 1 || hops[0] != "/start" {
		t.Errorf("status %d, requests %v: want the 302 itself and /start alone", resp.StatusCode, hops)
	}
}

// TestSendProxy: through the egress proxy, a refusal the proxy names (its header) is a
// *browse.EgressError, and a proxy in the environment is never used.
func TestSendProxy(t *testing.T) {
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.RequestURI)
		w.Header().Set(browse.EgressHeader, "denied by policy")
		w.WriteHeader(http.StatusForbidden)
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	c, err := New(Options{Proxy: pu})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Send(ctxT(t), http.MethodGet, "http://site.test/records/1", nil, nil)
	if e, ok := errors.AsType[*browse.EgressError](err); !ok || e.Reason != "denied by policy" || e.Status != http.StatusForbidden {
		t.Errorf("the proxy's refusal: %v, want an EgressError naming it", err)
	}
	if len(seen) != 1 || seen[0] != "http://site.test/records/1" {
		t.Errorf("the proxy saw %v, want the absolute URL once", seen)
	}

	// The environment's proxy (http.ProxyFromEnvironment) reads the environment once per process,
	// so the transport itself is asked: with no proxy given, it has no proxy function at all.
	direct, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if direct.tr.Proxy != nil {
		t.Error("no proxy given, yet the transport has a proxy function (the environment's?)")
	}
}
