// Package fetch is the bridge's HTTP client: the browser never fetches a document or a subresource
// itself, the bridge does, through a Client. A Client sends exactly the URL the policy decided,
// byte for byte; it never follows a redirect (the bridge decides each hop), never takes a proxy
// from the environment, keeps its own cookie jar, and reports the egress proxy's own refusal of a
// request as a *browse.EgressError. It decides nothing: what it is given was decided.
package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// Options are a Client's: the egress proxy (nil: none, never the environment's), the roots a
// server's certificate is verified against (nil: the system's), and how long a response's header
// may take.
type Options struct {
	Proxy         *url.URL
	Roots         *x509.CertPool
	HeaderTimeout time.Duration
}

// Client makes the bridge's own requests. It never follows a redirect.
type Client struct {
	client *http.Client
	tr     *http.Transport
}

// New makes a Client.
func New(o Options) (*Client, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:                 nil, // never from the environment
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.HeaderTimeout,
	}
	if o.Roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: o.Roots, MinVersion: tls.VersionTLS12}
	}
	if o.Proxy != nil {
		tr.Proxy = http.ProxyURL(o.Proxy)
	}
	return &Client{
		tr: tr,
		client: &http.Client{
			Transport:     tr,
			Jar:           jar,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Close closes the Client's idle connections.
func (f *Client) Close() { f.tr.CloseIdleConnections() }

// Send makes one request with exactly the decided path and query, never following a redirect. A
// refusal or failure of the egress proxy itself is a *browse.EgressError. Callers decide the
// method first (the bridge: a read, or a sign-in write under a person's lease).
func (f *Client) Send(ctx context.Context, method, rawURL string, hdr http.Header, body io.Reader) (*http.Response, error) {
	u, err := ExactURL(rawURL, f.tr.Proxy != nil)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, err
	}
	req.URL = u
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	if reason := proxyReason(resp.Header.Get(browse.EgressHeader)); f.tr.Proxy != nil && reason != "" && resp.StatusCode >= 400 {
		// The egress proxy refused or failed the request itself (it removes this header from
		// every upstream response, so only the proxy sets it).
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		return nil, &browse.EgressError{Host: u.Host, Status: resp.StatusCode, Reason: reason}
	}
	return resp, nil
}

// proxyReason keeps a proxy reason phrase if it looks like one: short lower-case words.
func proxyReason(s string) string {
	if len(s) > 64 {
		return ""
	}
	for _, c := range s {
		if c != ' ' && (c < 'a' || c > 'z') {
			return ""
		}
	}
	return s
}

// ExactURL is the request URL for rawURL, a canonical URL the policy decided, that net/http sends
// with exactly its path and query, byte for byte: parsed into a url.URL and written back,
// characters such as '|' and '^' would be escaped again. The request target goes in Opaque: the
// path itself (origin form), or "//host/path", which net/http writes as the absolute form
// "scheme://host/path" — what a plain-HTTP request to a proxy needs (viaProxy), and the only
// exact form of a path that starts with "//". Path, decoded, is only for the cookie jar.
func ExactURL(rawURL string, viaProxy bool) (*url.URL, error) {
	pu, err := policy.ParseURL(rawURL, "")
	if err != nil {
		return nil, err
	}
	if pu.HasUserinfo() {
		return nil, fmt.Errorf("url with userinfo refused")
	}
	host := strings.TrimPrefix(pu.Origin(), pu.Scheme()+"://")
	path := pu.Path()
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q cannot be sent", path)
	}
	dec, err := url.PathUnescape(path)
	if err != nil {
		dec = path
	}
	u := &url.URL{Scheme: pu.Scheme(), Host: host, Opaque: path, Path: dec, RawQuery: pu.RawQuery()}
	u.ForceQuery = u.RawQuery == "" && strings.HasSuffix(pu.String(), "?")
	if viaProxy && u.Scheme == "http" || strings.HasPrefix(path, "//") {
		u.Opaque = "//" + host + path
	}
	return u, nil
}

// ReadCapped reads at most limit bytes of r, and reports whether there was more. size, when not
// negative, is the length the response declared: the buffer is made that large at once (never
// over the limit) rather than grown by copies.
func ReadCapped(r io.Reader, limit, size int64) ([]byte, bool, error) {
	c := int64(32 << 10)
	if size >= 0 {
		c = size + 1 // room to read EOF without growing
	}
	b := make([]byte, 0, min(c, limit+1))
	lr := io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}
