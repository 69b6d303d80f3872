package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// All traffic in these tests stays on 127.0.0.1. Names are resolved only by injected resolvers,
// and dialers used with them refuse (and report) anything that is not loopback.

// upstream is a loopback origin server that counts the requests that reach it.
type upstream struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	seen    []seenRequest
	release chan struct{}
	entered chan struct{}
}

type seenRequest struct {
	Host, RequestURI string
	Header           http.Header
}

// queryRoutes name the query parameters the tests send: routes accept no others (issue 11).
const queryRoutes = `"/search?q={q}", "/records/{id}?q={q}&session={s}", "/sources/*?q={q}&x={x}"`

func newUpstream(t *testing.T, tlsServer bool) *upstream {
	t.Helper()
	up := &upstream{release: make(chan struct{}), entered: make(chan struct{}, 16)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.hits.Add(1)
		up.mu.Lock()
		up.seen = append(up.seen, seenRequest{r.Host, r.RequestURI, r.Header.Clone()})
		up.mu.Unlock()
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/records/1", http.StatusFound)
		case "/big":
			w.Header().Set("Content-Length", "4096")
			w.Write([]byte(strings.Repeat("x", 4096)))
		case "/stream":
			for range 8 {
				w.Write([]byte(strings.Repeat("y", 512)))
				w.(http.Flusher).Flush()
			}
		case "/slow":
			up.entered <- struct{}{}
			<-up.release
			io.WriteString(w, "slow done")
		case "/spoof":
			w.Header().Set(HeaderError, "write method")
			w.Header().Set("Connection", "X-Bar")
			w.Header().Set("X-Bar", "hop")
			io.WriteString(w, "spoofed")
		default:
			io.WriteString(w, "ok "+r.URL.Path)
		}
	})
	if tlsServer {
		up.Server = httptest.NewTLSServer(h)
	} else {
		up.Server = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		select {
		case <-up.release:
		default:
			close(up.release)
		}
		up.Close()
	})
	return up
}

func (up *upstream) port() string {
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	return port
}

func (up *upstream) last() seenRequest {
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.seen) == 0 {
		return seenRequest{}
	}
	return up.seen[len(up.seen)-1]
}

// testPolicy names the upstream by its literal origin, the TLS upstream (if any) as an https
// origin, and each extra name on the upstream's port.
func testPolicy(t testing.TB, up, tlsUp *upstream, names ...string) *policy.Policy {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nsites:\n")
	fmt.Fprintf(&b, "  - origin: %s\n    read: [/, /search, \"/records/{id}\", /redirect, /big, /stream, /slow, /spoof, /echo, \"/sources/*\", %s]\n", up.URL, queryRoutes)
	if tlsUp != nil {
		fmt.Fprintf(&b, "  - origin: %s\n    read: [/]\n", tlsUp.URL)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "  - origin: http://%s:%s\n    read: [/, \"/records/{id}\"]\n", n, up.port())
	}
	pol, err := policy.Parse([]byte(b.String()), "test.yaml")
	if err != nil {
		t.Fatalf("policy.Parse:\n%s\n%v", b.String(), err)
	}
	return pol
}

// recorder collects the decision hook's records and the log lines.
type recorder struct {
	mu   sync.Mutex
	ds   []Decision
	logs []string
}

func (r *recorder) hook(d Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ds = append(r.ds, d)
}

func (r *recorder) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) decisions() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Decision(nil), r.ds...)
}

// mark is the number of decisions recorded so far, for next.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ds)
}

// next waits (at most 5 s) for the first decision recorded after mark and returns it. The proxy
// records a request when its handler returns, which may be after the client has read the whole
// response: reading the record at once would race with it.
func (r *recorder) next(t *testing.T, mark int) Decision {
	t.Helper()
	waitFor(t, func() bool { return r.mark() > mark })
	return r.decisions()[mark]
}

func (r *recorder) options() []Option {
	return []Option{WithDecisionHook(r.hook), WithLogf(r.logf)}
}

func startProxy(t testing.TB, pol *policy.Policy, opts ...Option) *Proxy {
	t.Helper()
	p, err := Start(context.Background(), pol, opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// proxyURL is the proxy's URL with the given credential ("" user: none).
func proxyURL(p *Proxy, user, pass string) *url.URL {
	u := &url.URL{Scheme: "http", Host: p.Addr()}
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u
}

// rawClient goes through the proxy with the given credential, follows no redirect and turns
// nothing into an error, so tests see the proxy's own responses.
func rawClient(p *Proxy, user, pass string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL(p, user, pass)), DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: 10 * time.Second,
	}
}

func authClient(p *Proxy) *http.Client {
	user, pass := p.Credentials()
	return rawClient(p, user, pass)
}

func authHeader(p *Proxy) string {
	user, pass := p.Credentials()
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + "\r\n"
}

// rawDo writes a request as given to the proxy and reads one response.
func rawDo(t *testing.T, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response to %q: %v", firstLine(req), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// staticResolver resolves names from a table and counts its calls; an unknown name fails.
type staticResolver struct {
	calls atomic.Int64
	table map[string][]string
}

func (r *staticResolver) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	ss, ok := r.table[host]
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// loopbackDialer dials loopback addresses and refuses, and reports, any other.
func loopbackDialer(t testing.TB) Dialer {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("proxy tried to dial non-loopback %q", address)
			return nil, fmt.Errorf("test dialer: refusing %q", address)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
}

// get fetches url through c; a request that fails fails the test. The body comes back read and
// closed, with the read's error.
func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}
