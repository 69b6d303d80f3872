package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// mitmTransport goes through p to https origins, trusting only the proxy's authority.
func mitmTransport(p *Proxy) *http.Transport {
	user, pass := p.Credentials()
	return &http.Transport{
		Proxy:           http.ProxyURL(proxyURL(p, user, pass)),
		TLSClientConfig: &tls.Config{RootCAs: p.RootCAs()},
	}
}

// mitmPolicy names the plain upstream and the TLS upstream with the same read routes.
func mitmPolicy(t testing.TB, up, tlsUp *upstream) *policy.Policy {
	t.Helper()
	routes := `read: [/, /search, "/records/{id}", /big, /echo, /slow, "/records/{id}?q={q}&a={a}&b={b}"]`
	src := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    %s\n  - origin: %s\n    %s\n", up.URL, routes, tlsUp.URL, routes)
	pol, err := policy.Parse([]byte(src), "mitm.yaml")
	if err != nil {
		t.Fatalf("policy.Parse:\n%s\n%v", src, err)
	}
	return pol
}

// openTunnel CONNECTs to target through p and completes TLS with the proxy, trusting only its
// authority and naming serverName.
func openTunnel(t *testing.T, p *Proxy, target, serverName string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	tc := tls.Client(c, &tls.Config{RootCAs: p.RootCAs(), ServerName: serverName})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS with the proxy for %s: %v", target, err)
	}
	return tc, bufio.NewReader(tc)
}

// TestMITM: inside an allowed tunnel every request is decided as a plain-HTTP one is, recorded at
// once, and what is allowed reaches the upstream with exactly the decided path and query.
func TestMITM(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	p := startProxy(t, mitmPolicy(t, up, tlsUp), append(rec.options(), WithUpstreamRoots(tlsUp.Certificate()))...)
	target := tlsUp.Listener.Addr().String()
	host := "Host: " + target + "\r\n"

	tests := []struct {
		name, req  string
		wantStatus int
		wantReason string // HeaderError; "" for an allowed request
		wantPath   string // the decision's path
		wantURI    string // what the upstream must see, for an allowed request
	}{
		{name: "positive control: a read route is forwarded", req: "GET /records/42?q=1 HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 200, wantPath: "/records/42", wantURI: "/records/42?q=1"},
		{name: "HEAD of a read route is forwarded", req: "HEAD /search HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 200, wantPath: "/search", wantURI: "/search"},
		// No %2F in the path: a route parameter never holds an encoded slash (issue 11).
		{name: "exact bytes: characters Go would re-encode", req: "GET /records/..admin%7C|^%C3%A9?a=|^&b=%2F HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 200, wantPath: "/records/..admin%7C|^%C3%A9", wantURI: "/records/..admin%7C|^%C3%A9?a=|^&b=%2F"},
		{name: "POST (beacon) denied", req: "POST /records/42 HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\nhi",
			wantStatus: 403, wantReason: policy.ReasonWriteMethod, wantPath: "/records/42"},
		{name: "POST without a body denied", req: "POST /records/42/cancel HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n",
			wantStatus: 403, wantReason: policy.ReasonWriteMethod, wantPath: "/records/42/cancel"},
		{name: "PUT denied", req: "PUT /records/42 HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\n{}",
			wantStatus: 403, wantReason: policy.ReasonWriteMethod, wantPath: "/records/42"},
		{name: "DELETE denied", req: "DELETE /records/42 HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 403, wantReason: policy.ReasonWriteMethod, wantPath: "/records/42"},
		{name: "GET with a body denied", req: "GET /records/42 HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\nhi",
			wantStatus: 403, wantReason: ReasonBody, wantPath: "/records/42"},
		{name: "WebSocket upgrade denied", req: "GET /records/42 HTTP/1.1\r\n" + host + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
			wantStatus: 403, wantReason: ReasonUpgrade, wantPath: "/records/42"},
		{name: "GET to a non-read route denied", req: "GET /admin/export HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 403, wantReason: policy.ReasonNoRule, wantPath: "/admin/export"},
		{name: "GET with a write word denied", req: "GET /records/42/delete HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 403, wantReason: policy.ReasonWriteWord, wantPath: "/records/42/delete"},
		{name: "Host header of another origin denied", req: "GET /records/42 HTTP/1.1\r\nHost: example.com\r\n\r\n",
			wantStatus: 403, wantReason: policy.ReasonHost, wantPath: ""},
		{name: "absolute form for another origin denied", req: "GET " + up.URL + "/records/42 HTTP/1.1\r\n" + host + "\r\n",
			wantStatus: 403, wantReason: policy.ReasonMalformed, wantPath: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := rec.mark()
			tc, br := openTunnel(t, p, target, "127.0.0.1")
			hits := tlsUp.hits.Load()
			if _, err := io.WriteString(tc, tt.req); err != nil {
				t.Fatal(err)
			}
			method, _, _ := strings.Cut(tt.req, " ")
			resp, err := http.ReadResponse(br, &http.Request{Method: method})
			if err != nil {
				t.Fatalf("response inside the tunnel: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || resp.Header.Get(HeaderError) != tt.wantReason {
				t.Errorf("%s\n\tgot  %d %q\n\twant %d %q", firstLine(tt.req), resp.StatusCode, resp.Header.Get(HeaderError), tt.wantStatus, tt.wantReason)
			}
			// The record is there while the tunnel is still open: the CONNECT first, then this
			// request.
			d := rec.next(t, mark+1)
			if c := rec.decisions()[mark]; c.Method != "CONNECT" || !c.Allowed() {
				t.Errorf("first record of the tunnel: %+v, want the allowed CONNECT", c)
			}
			if d.Layer != policy.LayerProxy || d.Method != method || d.Allowed() != (tt.wantReason == "") || d.Status != tt.wantStatus ||
				(tt.wantPath != "" && (d.Origin != tlsUp.URL || d.Path != tt.wantPath)) {
				t.Errorf("decision\n\tgot  %+v\n\twant %s %s%s, status %d", d, method, tlsUp.URL, tt.wantPath, tt.wantStatus)
			}
			if tt.wantReason != "" {
				if got := tlsUp.hits.Load(); got != hits {
					t.Errorf("denied request reached the upstream (%d hits)", got-hits)
				}
				return
			}
			if got := tlsUp.hits.Load(); got != hits+1 {
				t.Fatalf("allowed request: %d upstream hits, want 1", got-hits)
			}
			if got := tlsUp.last().RequestURI; got != tt.wantURI {
				t.Errorf("upstream request target\n\tgot  %q\n\twant %q", got, tt.wantURI)
			}
			if got := tlsUp.last().Host; got != target {
				t.Errorf("upstream Host\n\tgot  %q\n\twant %q", got, target)
			}
		})
	}

	t.Run("keep-alive: several requests in one tunnel, each decided", func(t *testing.T) {
		tc, br := openTunnel(t, p, target, "127.0.0.1")
		mark := rec.mark()
		for i, path := range []string{"/records/1", "/admin", "/records/2"} {
			io.WriteString(tc, "GET "+path+" HTTP/1.1\r\n"+host+"\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := rec.next(t, mark+i)
			if d.Path != path || d.Allowed() != (path != "/admin") {
				t.Errorf("request %d decision %+v, want %s", i, d, path)
			}
		}
	})

	t.Run("ALPN offers only http/1.1", func(t *testing.T) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		tc := tls.Client(c, &tls.Config{RootCAs: p.RootCAs(), ServerName: "127.0.0.1", NextProtos: []string{"h2", "http/1.1"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if got := tc.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
			t.Errorf("negotiated %q, want http/1.1", got)
		}
	})
}

// TestDecidedHook: the decided hook has a request's record while the request is still running
// (here, a response that has not begun), inside a tunnel and in plain HTTP; the decision hook has
// it only once it is over.
func TestDecidedHook(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	var decided, finished recorder
	p := startProxy(t, mitmPolicy(t, up, tlsUp), WithUpstreamRoots(tlsUp.Certificate()),
		WithDecidedHook(decided.hook), WithDecisionHook(finished.hook))
	for _, tt := range []struct {
		name   string
		origin *upstream
		client *http.Client
	}{
		{"https inside a tunnel", tlsUp, &http.Client{Transport: mitmTransport(p)}},
		{"plain http", up, authClient(p)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dm, fm := decided.mark(), finished.mark()
			done := make(chan error, 1)
			go func() {
				resp, err := tt.client.Get(tt.origin.URL + "/slow")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			<-tt.origin.entered // the upstream holds the response
			var d Decision
			waitFor(t, func() bool {
				for _, x := range decided.decisions()[dm:] {
					if x.Method == "GET" && x.Path == "/slow" {
						d = x
						return true
					}
				}
				return false
			})
			if !d.Allowed() || d.Origin != tt.origin.URL {
				t.Errorf("decided record %+v, want GET %s/slow allowed", d, tt.origin.URL)
			}
			for _, x := range finished.decisions()[fm:] {
				if x.Path == "/slow" {
					t.Errorf("finished record before the response ended: %+v", x)
				}
			}
			tt.origin.release <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMITMUpstreamCert: an upstream whose certificate does not verify is never talked to
// without verification; the request fails with a reason naming the host.
func TestMITMUpstreamCert(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	// No WithUpstreamRoots: the test server's certificate is not among the system roots.
	p := startProxy(t, mitmPolicy(t, up, tlsUp), rec.options()...)
	mark := rec.mark()
	resp, body, _ := get(t, &http.Client{Transport: mitmTransport(p)}, tlsUp.URL+"/records/1")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderError) != ReasonUpstreamCert {
		t.Errorf("GET with an unverifiable upstream\n\tgot  %d %q %q\n\twant 502 %q", resp.StatusCode, resp.Header.Get(HeaderError), body, ReasonUpstreamCert)
	}
	d := rec.next(t, mark+1)
	hostport := strings.TrimPrefix(tlsUp.URL, "https://")
	if !strings.Contains(d.Error, ReasonUpstreamCert+" for "+hostport) || p.Stats().UpstreamErrors != 1 {
		t.Errorf("decision\n\tgot  %+v\n\twant an error naming %s", d, hostport)
	}
	if tlsUp.hits.Load() != 0 {
		t.Errorf("the unverified upstream got %d requests", tlsUp.hits.Load())
	}
}

// TestMITMLeaves: a leaf is minted only for the host of an allowed CONNECT, and a client naming
// another server inside an allowed tunnel gets no certificate.
func TestMITMLeaves(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	p := startProxy(t, mitmPolicy(t, up, tlsUp), WithUpstreamRoots(tlsUp.Certificate()))
	for _, target := range []string{"example.com:443", up.Listener.Addr().String(), "127.0.0.1:1"} {
		resp, _ := rawDo(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
		if resp.StatusCode != 403 {
			t.Errorf("CONNECT %s: %d, want 403", target, resp.StatusCode)
		}
	}
	if got := p.ca.mintedHosts(); len(got) != 0 {
		t.Errorf("leaves minted for denied CONNECTs: %q", got)
	}
	// An allowed CONNECT whose ClientHello names another server.
	target := tlsUp.Listener.Addr().String()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(c, &tls.Config{RootCAs: p.RootCAs(), ServerName: "evil.example"})
	if err := tc.Handshake(); err == nil {
		t.Errorf("TLS handshake naming evil.example inside a tunnel to %s succeeded", target)
	}
	if got := p.ca.mintedHosts(); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("minted hosts\n\tgot  %q\n\twant [127.0.0.1]", got)
	}
	// The leaf verifies only against the run's authority, for its host.
	leaf, err := p.ca.leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509VerifyOptions(p, "127.0.0.1")); err != nil {
		t.Errorf("leaf does not verify against the run's authority: %v", err)
	}
	if _, err := leaf.Leaf.Verify(x509VerifyOptions(p, "evil.example")); err == nil {
		t.Errorf("leaf for 127.0.0.1 verifies for evil.example")
	}
	other := startProxy(t, mitmPolicy(t, up, tlsUp))
	if _, err := leaf.Leaf.Verify(x509VerifyOptions(other, "127.0.0.1")); err == nil {
		t.Errorf("one run's leaf verifies against another run's authority")
	}
	if p.SPKIHash() == other.SPKIHash() {
		t.Errorf("two runs share a key")
	}
}

func x509VerifyOptions(p *Proxy, name string) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: p.RootCAs(), DNSName: name}
}

// TestAuthorityNeverOnDisk: the authority's key is made in memory; the package writes no file
// (no non-test file imports os or io/ioutil), and a run that intercepts a tunnel leaves the
// temporary and home directories empty.
func TestAuthorityNeverOnDisk(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == "os" || path == "io/ioutil" || path == "os/exec" {
				t.Errorf("%s imports %s: the proxy must not touch the file system", f, path)
			}
		}
	}
	tmp, home := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", home)
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	p := startProxy(t, mitmPolicy(t, up, tlsUp), WithUpstreamRoots(tlsUp.Certificate()))
	resp, err := (&http.Client{Transport: mitmTransport(p)}).Get(tlsUp.URL + "/records/1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET through the tunnel: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, dir := range []string{tmp, home} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %d entries after a run", dir, len(ents))
		}
	}
}
