package proxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

func TestForward(t *testing.T) {
	up := newUpstream(t, false)
	other := newUpstream(t, false)
	pol := testPolicy(t, up, nil)
	rec := &recorder{}
	p := startProxy(t, pol, rec.options()...)
	c := authClient(p)

	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		header     map[string]string
		wantStatus int
		wantReason string // X-Browser-Agent-Error, and the decision's reason when denied
		wantHits   int64  // requests that reached up
	}{
		{name: "allowed GET reaches the upstream", method: "GET", url: up.URL + "/records/42", wantStatus: 200, wantHits: 1},
		{name: "allowed HEAD reaches the upstream", method: "HEAD", url: up.URL + "/search?q=x", wantStatus: 200, wantHits: 1},
		{name: "POST denied", method: "POST", url: up.URL + "/search", body: "q=x", wantStatus: 403, wantReason: policy.ReasonWriteMethod},
		{name: "POST without body denied", method: "POST", url: up.URL + "/search", wantStatus: 403, wantReason: policy.ReasonWriteMethod},
		{name: "PUT denied", method: "PUT", url: up.URL + "/records/1", wantStatus: 403, wantReason: policy.ReasonWriteMethod},
		{name: "OPTIONS denied", method: "OPTIONS", url: up.URL + "/", wantStatus: 403, wantReason: policy.ReasonWriteMethod},
		{name: "GET with a body denied", method: "GET", url: up.URL + "/search", body: "secret=1", wantStatus: 403, wantReason: ReasonBody},
		{name: "write-route GET denied", method: "GET", url: up.URL + "/records/42/delete", wantStatus: 403, wantReason: policy.ReasonWriteWord},
		{name: "write word in query denied", method: "GET", url: up.URL + "/search?action=confirm", wantStatus: 403, wantReason: policy.ReasonWriteWord},
		{name: "path with no read route denied", method: "GET", url: up.URL + "/admin", wantStatus: 403, wantReason: policy.ReasonNoRule},
		{name: "another port denied", method: "GET", url: other.URL + "/", wantStatus: 403, wantReason: policy.ReasonPort},
		{name: "another host denied", method: "GET", url: "http://localhost:" + up.port() + "/", wantStatus: 403, wantReason: policy.ReasonHost},
		{name: "websocket upgrade denied", method: "GET", url: up.URL + "/",
			header:     map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
			wantStatus: 403, wantReason: ReasonUpgrade},
		{name: "h2c upgrade denied", method: "GET", url: up.URL + "/", header: map[string]string{"Upgrade": "h2c", "Connection": "Upgrade, HTTP2-Settings"},
			wantStatus: 403, wantReason: ReasonUpgrade},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, beforeOther := up.hits.Load(), other.hits.Load()
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequest(tt.method, tt.url, body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			mark := rec.mark()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.method, tt.url, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("%s %s: status\n\tgot  %d (%s)\n\twant %d", tt.method, tt.url, resp.StatusCode, b, tt.wantStatus)
			}
			if got := resp.Header.Get(HeaderError); got != tt.wantReason {
				t.Errorf("%s %s: %s\n\tgot  %q\n\twant %q", tt.method, tt.url, HeaderError, got, tt.wantReason)
			}
			if got := up.hits.Load() - before; got != tt.wantHits {
				t.Errorf("%s %s: upstream hits\n\tgot  %d\n\twant %d", tt.method, tt.url, got, tt.wantHits)
			}
			if got := other.hits.Load() - beforeOther; got != 0 {
				t.Errorf("%s %s: other upstream hits\n\tgot  %d\n\twant 0", tt.method, tt.url, got)
			}
			d := rec.next(t, mark)
			wantVerdict := policy.Deny
			if tt.wantReason == "" {
				wantVerdict = policy.Allow
			}
			if d.Verdict != wantVerdict || tt.wantReason != "" && d.Reason != tt.wantReason || d.Layer != policy.LayerProxy || d.Method != tt.method {
				t.Errorf("%s %s: decision\n\tgot  %+v\n\twant verdict %v, reason %q, layer proxy", tt.method, tt.url, d, wantVerdict, tt.wantReason)
			}
			if tt.wantReason != "" && !strings.Contains(string(b), tt.wantReason) {
				t.Errorf("%s %s: deny body %q does not name the reason %q", tt.method, tt.url, b, tt.wantReason)
			}
		})
	}
}

func TestRawRequests(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	p := startProxy(t, testPolicy(t, up, tlsUp))
	host, tlsHost := "127.0.0.1:"+up.port(), "127.0.0.1:"+tlsUp.port()
	tests := []struct {
		name       string
		req        string
		wantStatus int
		wantReason string
		wantURI    string // what the upstream got as its request-target, when allowed
	}{
		{name: "request to the proxy itself is not a proxy request",
			req: "GET / HTTP/1.1\r\nHost: " + p.Addr() + "\r\n" + authHeader(p) + "\r\n", wantStatus: 400, wantReason: ReasonNotProxy},
		{name: "lower-case method denied",
			req: "get http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n" + authHeader(p) + "\r\n", wantStatus: 403, wantReason: policy.ReasonWriteMethod},
		{name: "https origin in absolute form denied: https goes through CONNECT",
			req: "GET " + tlsUp.URL + "/ HTTP/1.1\r\nHost: " + tlsHost + "\r\n" + authHeader(p) + "\r\n", wantStatus: 403, wantReason: policy.ReasonScheme},
		{name: "https on an http origin's port denied",
			req: "GET https://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n" + authHeader(p) + "\r\n", wantStatus: 403, wantReason: policy.ReasonPort},
		{name: "upgrade named only in Connection denied",
			req: "GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\nConnection: upgrade\r\n" + authHeader(p) + "\r\n", wantStatus: 403, wantReason: ReasonUpgrade},
		{name: "chunked GET body denied",
			req: "GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\n" + authHeader(p) + "\r\n1\r\nx\r\n0\r\n\r\n", wantStatus: 403, wantReason: ReasonBody},
		{name: "Host header cannot steer the request",
			req: "GET http://" + host + "/records/1 HTTP/1.1\r\nHost: evil.example\r\n" + authHeader(p) + "\r\n", wantStatus: 200, wantURI: "/records/1"},
		{name: "canonical path and query are forwarded exactly",
			req: "GET http://" + host + "/sources/a|b/./c?q=%7e1&x=y HTTP/1.1\r\nHost: " + host + "\r\n" + authHeader(p) + "\r\n", wantStatus: 200, wantURI: "/sources/a|b/c?q=%7e1&x=y"},
		{name: "dot segments resolved before deciding",
			req: "GET http://" + host + "/sources/%2e%2e/records/x/%64elete HTTP/1.1\r\nHost: " + host + "\r\n" + authHeader(p) + "\r\n", wantStatus: 403, wantReason: policy.ReasonWriteWord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := up.hits.Load()
			resp, body := rawDo(t, p.Addr(), tt.req)
			if resp.StatusCode != tt.wantStatus || resp.Header.Get(HeaderError) != tt.wantReason {
				t.Errorf("%s:\n\tgot  %d %q (%q)\n\twant %d %q", firstLine(tt.req), resp.StatusCode, resp.Header.Get(HeaderError), body, tt.wantStatus, tt.wantReason)
			}
			wantHits := int64(0)
			if tt.wantURI != "" {
				wantHits = 1
				if got := up.last(); got.RequestURI != tt.wantURI || got.Host != host {
					t.Errorf("%s: upstream got\n\tgot  %q Host %q\n\twant %q Host %q", firstLine(tt.req), got.RequestURI, got.Host, tt.wantURI, host)
				}
			}
			if got := up.hits.Load() - before; got != wantHits {
				t.Errorf("%s: upstream hits\n\tgot  %d\n\twant %d", firstLine(tt.req), got, wantHits)
			}
		})
	}
}

func TestCredential(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	p := startProxy(t, testPolicy(t, up, tlsUp), rec.options()...)
	user, pass := p.Credentials()
	tests := []struct {
		name       string
		user, pass string
	}{
		{"no credential", "", ""},
		{"wrong password", user, pass + "x"},
		{"wrong user", user + "x", pass},
		{"empty password", user, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name+" plain", func(t *testing.T) {
			resp, err := rawClient(p, tt.user, tt.pass).Get(up.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusProxyAuthRequired {
				t.Errorf("status\n\tgot  %d\n\twant 407", resp.StatusCode)
			}
			if got, want := resp.Header.Get("Proxy-Authenticate"), `Basic realm="browser-agent"`; got != want {
				t.Errorf("Proxy-Authenticate\n\tgot  %q\n\twant %q", got, want)
			}
		})
		t.Run(tt.name+" connect", func(t *testing.T) {
			hdr := ""
			if tt.user != "" {
				hdr = "Proxy-Authorization: Basic " + basic(tt.user, tt.pass) + "\r\n"
			}
			target := tlsUp.Listener.Addr().String()
			resp, _ := rawDo(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+hdr+"\r\n")
			if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") == "" {
				t.Errorf("CONNECT: got %d, Proxy-Authenticate %q; want 407 with a challenge", resp.StatusCode, resp.Header.Get("Proxy-Authenticate"))
			}
		})
	}
	if up.hits.Load() != 0 || tlsUp.hits.Load() != 0 {
		t.Errorf("upstream hits without a credential\n\tgot  %d, %d\n\twant 0, 0", up.hits.Load(), tlsUp.hits.Load())
	}
	if got := p.Stats().AuthChallenges; got != int64(2*len(tests)) {
		t.Errorf("AuthChallenges\n\tgot  %d\n\twant %d", got, 2*len(tests))
	}
	if ds := rec.decisions(); len(ds) != 0 {
		t.Errorf("a 407 is a challenge, not a decision; got %d decisions: %+v", len(ds), ds)
	}
	// With the credential it works, and two proxies never share one.
	resp, err := authClient(p).Get(up.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with the credential: %v %v", resp, err)
	}
	resp.Body.Close()
	q := startProxy(t, testPolicy(t, up, nil))
	qu, qp := q.Credentials()
	if qu == user || qp == pass || len(pass) < 20 {
		t.Errorf("credentials are not random per proxy: %q/%q and %q/%q", user, pass, qu, qp)
	}
}

func TestConnect(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	otherTLS := newUpstream(t, true)
	rec := &recorder{}
	p := startProxy(t, testPolicy(t, up, tlsUp), append(rec.options(), WithUpstreamRoots(tlsUp.Certificate()))...)

	t.Run("allowed https origin tunnels", func(t *testing.T) {
		tr := mitmTransport(p)
		mark := rec.mark()
		resp, b, _ := get(t, &http.Client{Transport: tr}, tlsUp.URL+"/")
		tr.CloseIdleConnections()
		if resp.StatusCode != 200 || string(b) != "ok /" || tlsUp.hits.Load() != 1 {
			t.Errorf("tunnel\n\tgot  %d %q, %d hits\n\twant 200 \"ok /\", 1 hit", resp.StatusCode, b, tlsUp.hits.Load())
		}
		// The tunnel is recorded when it is established, then the request inside it.
		d := rec.next(t, mark)
		if d.Method != "CONNECT" || !d.Allowed() || d.Reason != ReasonOriginAllowed || d.Origin != tlsUp.URL || d.Path != "" || d.Status != 200 {
			t.Errorf("tunnel decision\n\tgot  %+v\n\twant CONNECT, allowed, %q, origin %s", d, ReasonOriginAllowed, tlsUp.URL)
		}
		d = rec.next(t, mark+1)
		if d.Method != "GET" || !d.Allowed() || d.Origin != tlsUp.URL || d.Path != "/" || d.BytesIn == 0 || d.Status != 200 {
			t.Errorf("request decision inside the tunnel\n\tgot  %+v\n\twant GET %s/ allowed, 200", d, tlsUp.URL)
		}
	})

	tests := []struct {
		name       string
		target     string
		extra      string
		wantReason string
	}{
		{"CONNECT to a non-allowed port", otherTLS.Listener.Addr().String(), "", policy.ReasonPort},
		{"CONNECT to an http origin (a ws:// tunnel)", up.Listener.Addr().String(), "", policy.ReasonScheme},
		{"CONNECT to another host", "example.com:443", "", policy.ReasonHost},
		{"CONNECT without a port", "127.0.0.1", "", policy.ReasonMalformed},
		{"CONNECT with an upgrade", tlsUp.Listener.Addr().String(), "Upgrade: websocket\r\nConnection: Upgrade\r\n", ReasonUpgrade},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tlsUp.hits.Load() + otherTLS.hits.Load() + up.hits.Load()
			resp, body := rawDo(t, p.Addr(), "CONNECT "+tt.target+" HTTP/1.1\r\nHost: "+tt.target+"\r\n"+tt.extra+authHeader(p)+"\r\n")
			if resp.StatusCode != 403 || resp.Header.Get(HeaderError) != tt.wantReason {
				t.Errorf("CONNECT %s\n\tgot  %d %q (%q)\n\twant 403 %q", tt.target, resp.StatusCode, resp.Header.Get(HeaderError), body, tt.wantReason)
			}
			if after := tlsUp.hits.Load() + otherTLS.hits.Load() + up.hits.Load(); after != before {
				t.Errorf("CONNECT %s reached an upstream", tt.target)
			}
		})
	}

	t.Run("Client reports a denied CONNECT as a DeniedError", func(t *testing.T) {
		_, err := p.Client().Get(otherTLS.URL + "/?token=SECRET")
		var de *DeniedError
		if !errors.As(err, &de) || de.Reason != policy.ReasonPort || de.Status != 403 || de.Method != "CONNECT" {
			t.Fatalf("Client().Get(other https)\n\tgot  %v (%#v)\n\twant a *DeniedError with reason %q", err, de, policy.ReasonPort)
		}
		if strings.Contains(de.Error(), "SECRET") {
			t.Errorf("DeniedError %q carries the query", de)
		}
	})
}

func TestClient(t *testing.T) {
	up := newUpstream(t, false)
	p := startProxy(t, testPolicy(t, up, nil))
	c := p.Client()

	t.Run("redirects are passed back, not followed", func(t *testing.T) {
		resp, err := c.Get(up.URL + "/redirect")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/records/1" || up.hits.Load() != 1 {
			t.Errorf("GET /redirect\n\tgot  %d Location %q, %d upstream hits\n\twant 302 Location \"/records/1\", 1 hit",
				resp.StatusCode, resp.Header.Get("Location"), up.hits.Load())
		}
	})
	t.Run("denied request is a DeniedError without the query", func(t *testing.T) {
		_, err := c.Get(up.URL + "/records/1/delete?token=SECRET")
		var de *DeniedError
		if !errors.As(err, &de) || de.Reason != policy.ReasonWriteWord || de.Status != 403 {
			t.Fatalf("got %v, want a *DeniedError with reason %q", err, policy.ReasonWriteWord)
		}
		if strings.Contains(de.Error(), "SECRET") {
			t.Errorf("DeniedError %q carries the query", de)
		}
	})
	t.Run("an upstream cannot forge the proxy's headers", func(t *testing.T) {
		resp, b, _ := get(t, c, up.URL+"/spoof")
		if resp.Header.Get(HeaderError) != "" || resp.Header.Get("X-Bar") != "" || string(b) != "spoofed" {
			t.Errorf("GET /spoof\n\tgot  %s=%q X-Bar=%q body %q\n\twant both headers removed, body \"spoofed\"", HeaderError, resp.Header.Get(HeaderError), resp.Header.Get("X-Bar"), b)
		}
	})
	t.Run("hop-by-hop headers and the credential are not forwarded", func(t *testing.T) {
		req, _ := http.NewRequest("GET", up.URL+"/echo", nil)
		req.Header.Set("Connection", "X-Foo")
		req.Header.Set("X-Foo", "hop")
		req.Header.Set("Keep-Alive", "timeout=5")
		req.Header.Set("Proxy-Connection", "keep-alive")
		req.Header.Set("X-Kept", "end-to-end")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := up.last().Header
		for _, h := range []string{"Proxy-Authorization", "X-Foo", "Keep-Alive", "Proxy-Connection"} {
			if v := got.Get(h); v != "" {
				t.Errorf("upstream got %s: %q", h, v)
			}
		}
		if got.Get("X-Kept") != "end-to-end" {
			t.Errorf("upstream lost an end-to-end header: %v", got)
		}
	})
}

func TestAddressChecks(t *testing.T) {
	up := newUpstream(t, false)
	names := []string{"localtest.example", "private.example", "meta.example", "mapped.example", "mixed.example", "nx.example", "empty.example", "cgnat.example"}
	pol := testPolicy(t, up, nil, names...)
	res := &staticResolver{table: map[string][]string{
		"localtest.example": {"127.0.0.1"},
		"private.example":   {"10.1.2.3"},
		"meta.example":      {"169.254.169.254"},
		"mapped.example":    {"::ffff:127.0.0.1"},
		"mixed.example":     {"93.184.215.14", "127.0.0.1"},
		"empty.example":     {},
		"cgnat.example":     {"100.64.0.1"},
	}}
	tests := []struct {
		name         string
		allowPrivate bool
		host         string
		wantStatus   int
		wantReason   string
	}{
		{"name resolving to loopback denied", false, "localtest.example", 403, ReasonAddress},
		{"name resolving to RFC 1918 denied", false, "private.example", 403, ReasonAddress},
		{"name resolving to CGNAT denied", false, "cgnat.example", 403, ReasonAddress},
		{"name resolving to link-local denied", false, "meta.example", 403, ReasonAddress},
		{"name resolving to IPv4-mapped loopback denied", false, "mapped.example", 403, ReasonAddress},
		{"name with one non-public address among public ones denied", false, "mixed.example", 403, ReasonAddress},
		{"name that does not resolve denied", false, "nx.example", 403, ReasonResolve},
		{"name with no addresses denied", false, "empty.example", 403, ReasonResolve},
		{"AllowPrivateNames lets a loopback name through", true, "localtest.example", 200, ""},
		{"AllowPrivateNames never allows link-local", true, "meta.example", 403, ReasonAddress},
		{"AllowPrivateNames never allows IPv4-mapped", true, "mapped.example", 403, ReasonAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, pol, WithResolver(res.resolve), WithDialer(loopbackDialer(t)), WithAllowPrivateNames(tt.allowPrivate))
			before := up.hits.Load()
			u := "http://" + tt.host + ":" + up.port() + "/"
			resp, err := authClient(p).Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || resp.Header.Get(HeaderError) != tt.wantReason {
				t.Errorf("GET %s\n\tgot  %d %q\n\twant %d %q", u, resp.StatusCode, resp.Header.Get(HeaderError), tt.wantStatus, tt.wantReason)
			}
			wantHits := int64(0)
			if tt.wantStatus == 200 {
				wantHits = 1
			}
			if got := up.hits.Load() - before; got != wantHits {
				t.Errorf("GET %s: upstream hits\n\tgot  %d\n\twant %d", u, got, wantHits)
			}
		})
	}
}

func TestCheckAddress(t *testing.T) {
	pol, err := policy.Parse([]byte(`version: 1
sites:
  - origin: http://127.0.0.1:8081
    read: [/]
  - origin: http://10.0.0.7:80
    read: [/]
  - origin: http://0.0.0.0:8081
    read: [/]
  - origin: http://224.0.0.1:80
    read: [/]
  - origin: http://[::1]:8081
    read: [/]
  - origin: http://named.example:8081
    read: [/]
`), "check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := &staticResolver{table: map[string][]string{"named.example": {"127.0.0.1"}, "public.example": {"93.184.215.14"}}}
	p, err := New(pol, WithResolver(res.resolve))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host       string
		port       int
		wantAddr   string
		wantReason string
	}{
		{"127.0.0.1", 8081, "127.0.0.1:8081", ""},                         // literal named by the policy
		{"127.0.0.1", 8082, "", ReasonAddress},                            // same address, port not named
		{"127.0.0.2", 8081, "", ReasonAddress},                            // another loopback address
		{"10.0.0.7", 80, "10.0.0.7:80", ""},                               // private literal named
		{"10.0.0.8", 80, "", ReasonAddress},                               // private literal not named
		{"0.0.0.0", 8081, "", ReasonAddress},                              // named, but unspecified is never dialed
		{"224.0.0.1", 80, "", ReasonAddress},                              // named, but multicast is never dialed
		{"[::1]", 8081, "[::1]:8081", ""},                                 // IPv6 literal named
		{"[::ffff:7f00:1]", 8081, "", ReasonAddress},                      // IPv4-mapped form of a named literal is not named
		{"93.184.215.14", 80, "93.184.215.14:80", ""},                     // public literal
		{"named.example", 8081, "", ReasonAddress},                        // a name is not its address
		{"public.example", 443, "93.184.215.14:443", ""},                  // public name
		{"unknown.example", 80, "", ReasonResolve},                        // resolver error
		{"93.184.215.14", 0, "", policy.ReasonPort},                       // no port
		{"[2001:db8::1]", 80, "", ReasonAddress},                          // documentation
		{"[2606:4700:4700::1111]", 443, "[2606:4700:4700::1111]:443", ""}, // public IPv6
	}
	for _, tt := range tests {
		addr, rule, reason := p.checkAddress(context.Background(), tt.host, tt.port)
		got := ""
		if addr.IsValid() {
			got = addr.String()
		}
		if got != tt.wantAddr || reason != tt.wantReason {
			t.Errorf("checkAddress(%q, %d)\n\tgot  %q %q (%s)\n\twant %q %q", tt.host, tt.port, got, reason, rule, tt.wantAddr, tt.wantReason)
		}
	}
}

// TestDNSRebinding: the resolver answers a public address first and loopback afterwards. The
// proxy resolves once per request and dials the address it checked, never the name.
func TestDNSRebinding(t *testing.T) {
	up := newUpstream(t, false)
	pol := testPolicy(t, up, nil, "rebind.example")
	var (
		mu        sync.Mutex
		calls     int
		dialed    []string
		publicIP  = netip.MustParseAddr("93.184.215.14")
		loopback  = netip.MustParseAddr("127.0.0.1")
		upAddr    = up.Listener.Addr().String()
		publicHit = netip.AddrPortFrom(publicIP, mustPort(t, up.port())).String()
	)
	resolver := func(_ context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return []netip.Addr{publicIP}, nil
		}
		return []netip.Addr{loopback}, nil
	}
	dialer := func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		var d net.Dialer
		switch {
		case address == publicHit:
			// Stand in for the public host: never send traffic off loopback.
			return d.DialContext(ctx, network, upAddr)
		case address == upAddr:
			return d.DialContext(ctx, network, address)
		}
		t.Errorf("dialed %q, not a checked address", address)
		return nil, errors.New("test dialer: unexpected address")
	}
	p := startProxy(t, pol, WithResolver(resolver), WithDialer(dialer))
	u := "http://rebind.example:" + up.port() + "/"

	resp, err := authClient(p).Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	gotCalls, gotDialed := calls, slices.Clone(dialed)
	mu.Unlock()
	if resp.StatusCode != 200 || gotCalls != 1 || !slices.Equal(gotDialed, []string{publicHit}) {
		t.Errorf("first request\n\tgot  %d, %d resolutions, dialed %q\n\twant 200, 1 resolution, dialed [%q]", resp.StatusCode, gotCalls, gotDialed, publicHit)
	}
	if got, want := up.last().Host, "rebind.example:"+up.port(); got != want {
		t.Errorf("Host header\n\tgot  %q\n\twant %q", got, want)
	}

	// The name now rebinds to loopback: the second request is checked afresh and denied.
	resp, err = authClient(p).Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	gotCalls, gotDialed = calls, slices.Clone(dialed)
	mu.Unlock()
	if resp.StatusCode != 403 || resp.Header.Get(HeaderError) != ReasonAddress || gotCalls != 2 || len(gotDialed) != 1 {
		t.Errorf("rebound request\n\tgot  %d %q, %d resolutions, dialed %q\n\twant 403 %q, 2 resolutions, nothing more dialed",
			resp.StatusCode, resp.Header.Get(HeaderError), gotCalls, gotDialed, ReasonAddress)
	}
	// A literal host is never resolved.
	resp, err = authClient(p).Get(up.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != 200 || calls != 2 || !slices.Equal(dialed, []string{publicHit, upAddr}) {
		t.Errorf("literal request\n\tgot  %d, %d resolutions, dialed %q\n\twant 200, no new resolution, dialed the literal", resp.StatusCode, calls, dialed)
	}
}

func TestBodyCap(t *testing.T) {
	up := newUpstream(t, false)
	rec := &recorder{}
	p := startProxy(t, testPolicy(t, up, nil), append(rec.options(), WithBodyCap(1024))...)
	c := authClient(p)

	t.Run("declared length over the cap is cut and marked", func(t *testing.T) {
		mark := rec.mark()
		resp, b, err := get(t, c, up.URL+"/big")
		if err != nil || len(b) != 1024 || resp.Header.Get(HeaderTruncated) == "" {
			t.Errorf("GET /big\n\tgot  %d bytes, err %v, %s=%q\n\twant 1024 bytes, no error, the header set", len(b), err, HeaderTruncated, resp.Header.Get(HeaderTruncated))
		}
		if d := rec.next(t, mark); !d.Truncated || d.BytesIn != 1024 {
			t.Errorf("decision\n\tgot  %+v\n\twant Truncated, BytesIn 1024", d)
		}
	})
	t.Run("undeclared length over the cap is cut with an error", func(t *testing.T) {
		mark := rec.mark()
		_, b, err := get(t, c, up.URL+"/stream")
		if err == nil || len(b) > 1024 {
			t.Errorf("GET /stream\n\tgot  %d bytes, err %v\n\twant at most 1024 bytes and an incomplete-body error", len(b), err)
		}
		if d := rec.next(t, mark); !d.Truncated {
			t.Errorf("decision\n\tgot  %+v\n\twant Truncated", d)
		}
	})
	t.Run("HEAD is not cut", func(t *testing.T) {
		resp, err := c.Head(up.URL + "/big")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ContentLength != 4096 || resp.Header.Get(HeaderTruncated) != "" {
			t.Errorf("HEAD /big\n\tgot  Content-Length %d, %s=%q\n\twant 4096, unset", resp.ContentLength, HeaderTruncated, resp.Header.Get(HeaderTruncated))
		}
	})
	if got := p.Stats().Truncated; got != 2 {
		t.Errorf("Stats().Truncated\n\tgot  %d\n\twant 2", got)
	}
}

func TestConnCap(t *testing.T) {
	up := newUpstream(t, false)
	p := startProxy(t, testPolicy(t, up, nil), WithMaxConns(1))
	c := authClient(p)
	first := make(chan int, 1)
	go func() {
		resp, err := c.Get(up.URL + "/slow")
		if err != nil {
			first <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	select {
	case <-up.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("slow request never reached the upstream")
	}
	before := up.hits.Load()
	resp, err := c.Get(up.URL + "/records/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeaderError) != ReasonTooMany || up.hits.Load() != before {
		t.Errorf("second request while one is in flight\n\tgot  %d %q\n\twant 503 %q, no upstream hit", resp.StatusCode, resp.Header.Get(HeaderError), ReasonTooMany)
	}
	// A denied request needs no slot.
	resp, err = c.Get(up.URL + "/admin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("denied request while full\n\tgot  %d\n\twant 403", resp.StatusCode)
	}
	close(up.release)
	if got := <-first; got != 200 {
		t.Errorf("in-flight request\n\tgot  %d\n\twant 200", got)
	}
	resp, err = c.Get(up.URL + "/records/1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after release: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := p.Stats().DeniedByReason[ReasonTooMany]; got != 1 {
		t.Errorf("DeniedByReason[%q]\n\tgot  %d\n\twant 1", ReasonTooMany, got)
	}
}

// TestNoQueryRecorded plants a secret in the query of allowed and denied requests and looks for
// it in every record, log line and deny response.
func TestNoQueryRecorded(t *testing.T) {
	up := newUpstream(t, false)
	rec := &recorder{}
	res := &staticResolver{table: map[string][]string{"localtest.example": {"127.0.0.1"}}}
	p := startProxy(t, testPolicy(t, up, nil, "localtest.example"), append(rec.options(), WithResolver(res.resolve), WithDialer(loopbackDialer(t)))...)
	c := authClient(p)
	const secret = "SECRET"
	reqs := []struct{ method, url string }{
		{"GET", up.URL + "/search?token=" + secret},
		{"HEAD", up.URL + "/records/1?token=" + secret + "#frag" + secret},
		{"GET", up.URL + "/redirect?token=" + secret},
		{"POST", up.URL + "/search?token=" + secret},
		{"GET", up.URL + "/records/1/delete?token=" + secret},
		{"GET", up.URL + "/search?confirm=" + secret},
		{"GET", up.URL + "/admin?token=" + secret},
		{"GET", "http://localtest.example:" + up.port() + "/?token=" + secret},
		{"GET", "http://127.0.0.1:1/?token=" + secret},
	}
	var seen []string
	for _, r := range reqs {
		req, _ := http.NewRequest(r.method, r.url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen = append(seen, string(b), resp.Header.Get(HeaderError))
	}
	// A 407 is logged too, without the query.
	_, b, _ := get(t, rawClient(p, "", ""), up.URL+"/search?token="+secret)
	seen = append(seen, string(b))
	rec.next(t, len(reqs)-1) // the last request's record may come after its response
	ds := rec.decisions()
	if len(ds) != len(reqs) {
		t.Errorf("one record per request\n\tgot  %d records\n\twant %d", len(ds), len(reqs))
	}
	js, _ := json.Marshal(ds)
	rec.mu.Lock()
	logs := strings.Join(rec.logs, "\n")
	rec.mu.Unlock()
	for what, s := range map[string]string{"decisions": string(js), "logs": logs, "responses": strings.Join(seen, "\n")} {
		if strings.Contains(s, secret) || strings.Contains(s, "token") {
			t.Errorf("%s carry the query string:\n%s", what, s)
		}
	}
	if !strings.Contains(string(js), `"duration_ms":`) || !strings.Contains(string(js), `"layer":"proxy"`) {
		t.Errorf("records lack duration_ms or layer: %s", js)
	}
	if !strings.Contains(logs, CanonicalDecision) || !strings.Contains(logs, "407") {
		t.Errorf("no %s log line in:\n%s", CanonicalDecision, logs)
	}
}

func TestDisagreement(t *testing.T) {
	up := newUpstream(t, false)
	other := newUpstream(t, true)
	rec := &recorder{}
	res := &staticResolver{table: map[string][]string{"localtest.example": {"127.0.0.1"}}}
	p := startProxy(t, testPolicy(t, up, nil, "localtest.example"), append(rec.options(), WithResolver(res.resolve), WithDialer(loopbackDialer(t)))...)
	c := authClient(p)
	name := "http://localtest.example:" + up.port() + "/"

	// Denied, but the browser layer never allowed it: no disagreement.
	mark := rec.mark()
	resp, _ := c.Get(up.URL + "/admin")
	resp.Body.Close()
	if rec.next(t, mark).Disagreement || p.Disagreements() != 0 {
		t.Fatalf("disagreement without a browser-layer allow")
	}
	// The browser layer allowed the name (its record has no query); the proxy denies its loopback
	// address.
	p.NoteBrowserAllowed("GET", name)
	mark = rec.mark()
	resp, _ = c.Get(name + "?q=1")
	resp.Body.Close()
	if d := rec.next(t, mark); resp.StatusCode != 403 || !d.Disagreement || p.Disagreements() != 1 {
		t.Errorf("GET %s after the browser allowed it\n\tgot  %d, disagreement %t, count %d\n\twant 403, true, 1", name, resp.StatusCode, d.Disagreement, p.Disagreements())
	}
	// An https URL the browser allowed reaches the proxy as a CONNECT to its origin.
	p.NoteBrowserAllowed("GET", other.URL+"/page?x=1")
	target := other.Listener.Addr().String()
	resp, _ = rawDo(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
	if resp.StatusCode != 403 || p.Disagreements() != 2 || p.Stats().Disagreements != 2 {
		t.Errorf("CONNECT after the browser allowed the origin\n\tgot  %d, count %d\n\twant 403, 2", resp.StatusCode, p.Disagreements())
	}
}

func TestCloseFailsClosed(t *testing.T) {
	up := newUpstream(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, testPolicy(t, up, nil))
	if err != nil {
		t.Fatal(err)
	}
	c := authClient(p)
	resp, err := c.Get(up.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("before close: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel() // the run's context ends: the proxy closes
	waitFor(t, func() bool {
		conn, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	if _, err := c.Get(up.URL + "/"); err == nil {
		t.Errorf("request through a closed proxy succeeded")
	}
	if got := up.hits.Load(); got != 1 {
		t.Errorf("upstream hits\n\tgot  %d\n\twant 1", got)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// As a handler, a closed proxy refuses too.
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", up.URL+"/", nil)
	r.Header.Set("Proxy-Authorization", "Basic "+basic(p.Credentials()))
	p.ServeHTTP(w, r)
	if w.Code != 503 || w.Header().Get(HeaderError) != ReasonClosed {
		t.Errorf("ServeHTTP after Close\n\tgot  %d %q\n\twant 503 %q", w.Code, w.Header().Get(HeaderError), ReasonClosed)
	}
}

// closeWithin closes p and fails the test with why when Close has not returned after d.
func closeWithin(t *testing.T, p *Proxy, d time.Duration, why string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(d):
		t.Fatal(why)
	}
}

// TestCloseEndsRequestsInFlight: Close ends a request the upstream is slow to answer (its context
// ends with the proxy) rather than waiting for the upstream, also where the proxy serves as a
// handler of another server, whose requests' contexts do not end with the proxy.
func TestCloseEndsRequestsInFlight(t *testing.T) {
	up := newUpstream(t, false)
	p, err := Start(context.Background(), testPolicy(t, up, nil))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", up.URL+"/slow", nil)
		r.Header.Set("Proxy-Authorization", "Basic "+basic(p.Credentials()))
		p.ServeHTTP(w, r)
		served <- w.Code
	}()
	select {
	case <-up.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow request never reached the upstream")
	}
	closeWithin(t, p, 10*time.Second, "Close waited for the upstream: the request in flight did not end with the proxy")
	if code := <-served; code == http.StatusOK {
		t.Errorf("the request in flight when the proxy closed was answered 200")
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	p, err := Start(context.Background(), testPolicy(t, up, tlsUp), rec.options()...)
	if err != nil {
		t.Fatal(err)
	}
	target := tlsUp.Listener.Addr().String()
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
	buf := make([]byte, 128)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := conn.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("CONNECT: got %q", buf[:n])
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: p.RootCAs(), ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS through the tunnel: %v", err)
	}
	closeWithin(t, p, 5*time.Second, "Close did not end an open tunnel")
	if ds := rec.decisions(); len(ds) != 1 || ds[0].Method != "CONNECT" || !ds[0].Allowed() {
		t.Errorf("Close returned before the tunnel's record: %+v", ds)
	}
}

func TestUpstreamDown(t *testing.T) {
	up := newUpstream(t, false)
	pol := testPolicy(t, up, nil)
	rec := &recorder{}
	p := startProxy(t, pol, rec.options()...)
	up.Close() // the allowed origin is down
	mark := rec.mark()
	resp, err := authClient(p).Get(up.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	d := rec.next(t, mark)
	if resp.StatusCode != http.StatusBadGateway || !d.Allowed() || d.Error == "" || p.Stats().UpstreamErrors != 1 {
		t.Errorf("GET to a down origin\n\tgot  %d, decision %+v\n\twant 502, allowed with an error", resp.StatusCode, d)
	}
}

func TestChromiumArgs(t *testing.T) {
	up := newUpstream(t, false)
	p := startProxy(t, testPolicy(t, up, nil))
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") || p.Server() != "http://"+p.Addr() {
		t.Errorf("Addr %q, Server %q: want 127.0.0.1:PORT and http://127.0.0.1:PORT", p.Addr(), p.Server())
	}
	want := []string{
		"--proxy-server=" + p.Server(),
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--ignore-certificate-errors-spki-list=" + p.SPKIHash(),
	}
	if got := p.ChromiumArgs(); !slices.Equal(got, want) {
		t.Errorf("ChromiumArgs\n\tgot  %q\n\twant %q", got, want)
	}
}

func TestNewOptions(t *testing.T) {
	pol := testPolicy(t, newUpstream(t, false), nil)
	for _, tt := range []struct {
		name string
		opt  Option
	}{
		{"zero body cap", WithBodyCap(0)},
		{"negative max conns", WithMaxConns(-1)},
	} {
		if _, err := New(pol, tt.opt); err == nil {
			t.Errorf("New with %s: no error", tt.name)
		}
	}
	if _, err := New(nil); err == nil {
		t.Errorf("New(nil): no error")
	}
}

func TestForwardURL(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:8081")
	tests := []struct {
		raw    string
		want   string // RequestURI sent upstream; "" when it cannot be forwarded exactly
		wantOK bool
	}{
		{"http://h/a/b?c=d", "/a/b?c=d", true},
		{"http://h/a|b^c", "/a|b^c", true},
		{"http://h/%zz", "/%zz", true},
		{"http://h//evil.example/x", "//evil.example/x", true},
		{"http://h//a%2fb", "//a%2fb", true},
	}
	for _, tt := range tests {
		u, err := policy.ParseURL(tt.raw, "")
		if err != nil {
			t.Fatal(err)
		}
		out, ok := forwardURL(u, addr)
		got := ""
		if ok {
			got = out.RequestURI()
			if out.Host != "127.0.0.1:8081" {
				t.Errorf("forwardURL(%q).Host = %q, want the checked address", tt.raw, out.Host)
			}
		}
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("forwardURL(%q)\n\tgot  %q %t\n\twant %q %t", tt.raw, got, ok, tt.want, tt.wantOK)
		}
	}
}

func basic(user, pass string) string {
	return strings.TrimPrefix(strings.TrimSuffix(authHeaderFor(user, pass), "\r\n"), "Proxy-Authorization: Basic ")
}

func authHeaderFor(user, pass string) string {
	p := &Proxy{auth: credential{user: user, pass: pass}}
	return authHeader(p)
}

func mustPort(t *testing.T, s string) uint16 {
	t.Helper()
	ap, err := netip.ParseAddrPort("127.0.0.1:" + s)
	if err != nil {
		t.Fatal(err)
	}
	return ap.Port()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !testutil.Eventually(5*time.Second, cond) {
		t.Fatalf("condition not met in 5s")
	}
}
