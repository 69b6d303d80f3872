package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/browser-agent/browser-agent/policy"
)

// serveForward decides a plain-HTTP request in absolute form.
func (p *Proxy) serveForward(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision) {
	if !r.URL.IsAbs() {
		p.refuse(w, rec, http.StatusBadRequest, ReasonNotProxy, "request target is not an absolute URL", "")
		return
	}
	u, err := policy.ParseURL(r.RequestURI, "")
	if err != nil {
		d, _ := p.pol.Decide(policy.DecideArgs{Method: r.Method, URL: r.RequestURI})
		p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, "")
		return
	}
	p.serveURL(ctx, w, r, rec, u, "http")
}

// serveURL decides one request for the full canonical URL u, a plain-HTTP request (scheme http)
// or one read inside an intercepted tunnel (scheme https), and forwards it when it is allowed: to
// the checked address, with exactly the canonical path and query that were decided.
func (p *Proxy) serveURL(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision, u *policy.URL, scheme string) {
	rec.Origin, rec.Path = u.Origin(), u.Path()
	note := noteKeyURL(r.Method, u.Origin()+u.Path())
	if isUpgrade(r.Header) {
		p.refuse(w, rec, http.StatusForbidden, ReasonUpgrade, "upgrade "+policy.Cut(r.Header.Get("Upgrade"), 32), note)
		return
	}
	var d policy.Decision
	body := io.Reader(http.NoBody)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A write: to a sign-in route while a person holds the lease; else held for a person
		// (WithHold) or refused.
		switch {
		case !p.signInLease.Load() && p.cfg.hold != nil:
			b, reason, rule := []byte(nil), "", ""
			if d, b, reason, rule = p.holdWrite(ctx, r, u); reason != "" {
				p.refuse(w, rec, http.StatusForbidden, reason, rule, note)
				return
			}
			body = bytes.NewReader(b)
		case !p.signInLease.Load():
			p.refuse(w, rec, http.StatusForbidden, policy.ReasonWriteMethod, "method "+rec.Method, note)
			return
		default:
			if d = p.pol.DecideSignIn(r.Method, u); !d.Allowed() {
				p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, note)
				return
			}
			if r.ContentLength < 0 || r.ContentLength > MaxSignInBody {
				p.refuse(w, rec, http.StatusForbidden, ReasonBody, "sign-in body longer than the cap", note)
				return
			}
			b, err := io.ReadAll(io.LimitReader(r.Body, MaxSignInBody+1))
			if err != nil || int64(len(b)) != r.ContentLength {
				p.refuse(w, rec, http.StatusForbidden, ReasonBody, "sign-in body unreadable", note)
				return
			}
			body = bytes.NewReader(b)
		}
	} else if r.ContentLength != 0 {
		p.refuse(w, rec, http.StatusForbidden, ReasonBody, "body on "+r.Method, note)
		return
	} else {
		d = p.pol.DecideURL(r.Method, u)
	}
	if !d.Allowed() {
		p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, note)
		return
	}
	if u.Scheme() != scheme {
		// An https URL in absolute form would need the proxy to originate TLS; browsers use CONNECT.
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonScheme, u.Scheme()+" must use CONNECT", note)
		return
	}
	addr, rule, reason := p.checkAddress(ctx, u.Host(), u.Port())
	if reason != "" {
		p.refuse(w, rec, http.StatusForbidden, reason, rule, note)
		return
	}
	target, ok := forwardURL(u, addr)
	if !ok {
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonMalformed, "path cannot be forwarded exactly", note)
		return
	}
	if scheme == "http" {
		// A request inside a tunnel runs on the tunnel's slot: HTTP/1.1 sends one at a time.
		if !p.acquire() {
			p.refuse(w, rec, http.StatusServiceUnavailable, ReasonTooMany, "", "")
			return
		}
		defer p.release()
	}
	rec.Verdict, rec.Rule, rec.Reason, rec.Addr = policy.Allow, d.Rule, d.Reason, addr.String()
	p.decided(rec)

	hdr := r.Header.Clone()
	removeHopHeaders(hdr)
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = []string{""} // do not let the transport add Go's
	}
	tr := p.tr
	if scheme == "https" {
		tr = p.tlsTr
		ctx = context.WithValue(ctx, checkedAddrKey{}, addr)
	}
	out := (&http.Request{
		Method:     r.Method,
		URL:        target,
		Host:       strings.TrimPrefix(u.Origin(), scheme+"://"),
		Header:     hdr,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Body:       io.NopCloser(body),
	}).WithContext(ctx)
	if br, ok := body.(*bytes.Reader); ok {
		out.ContentLength = br.Size() // the bytes read, decided and (held) approved
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		p.upstreamFailed(w, rec, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		p.upstreamFailed(w, rec, errors.New("upstream switched protocols"))
		return
	}
	p.copyResponse(w, r, resp, rec)
}

// copyResponse writes the upstream's response to the client, cut at the body cap.
func (p *Proxy) copyResponse(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *Decision) {
	h := w.Header()
	removeHopHeaders(resp.Header)
	for k, vv := range resp.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Browser-Agent-") {
			continue // only the proxy speaks for the proxy
		}
		h[k] = vv
	}
	h.Del("Content-Length")
	limit := p.cfg.bodyCap
	hasBody := r.Method != http.MethodHead && resp.StatusCode >= 200 &&
		resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	declaredOver := false
	if cl := resp.ContentLength; cl >= 0 {
		if hasBody && cl > limit {
			declaredOver = true
			cl = limit
			h.Set(HeaderTruncated, fmt.Sprintf("body cut at %d bytes", limit))
		}
		h.Set("Content-Length", strconv.FormatInt(cl, 10))
	}
	rec.Status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if !hasBody {
		return
	}
	src := &readErr{r: p.budget.count(io.LimitReader(resp.Body, limit))}
	n, err := io.Copy(w, src)
	rec.BytesIn = n
	switch {
	case src.err != nil:
		rec.Error = "reading upstream body: " + policy.Text(src.err.Error(), policy.MaxTextLen)
		p.stats.upstreamErrors.Add(1)
		panic(http.ErrAbortHandler) // the client must not take a cut body for a whole one
	case err != nil:
		rec.Error = "writing to client: " + policy.Text(err.Error(), policy.MaxTextLen)
		return
	}
	if declaredOver {
		rec.Truncated = true
		p.stats.truncated.Add(1)
		return
	}
	if n == limit && resp.ContentLength < 0 {
		var one [1]byte
		if m, _ := io.ReadFull(resp.Body, one[:]); m > 0 {
			// The length was not declared, so the client cannot be told with a header; the
			// connection is cut instead, and the client sees an incomplete body.
			rec.Truncated = true
			p.stats.truncated.Add(1)
			panic(http.ErrAbortHandler)
		}
	}
}

// forwardURL is the URL of the outbound request: exactly the canonical path and query that were
// decided, and for http the checked address. An https URL keeps the origin's host:port, which
// keys the connection pool and is the name verified in the upstream's certificate; its
// connections are dialed to the checked address all the same (dialChecked). ok is false when
// net/http cannot send that path unchanged.
func forwardURL(u *policy.URL, addr netip.AddrPort) (*url.URL, bool) {
	path := u.Path()
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	out := &url.URL{Scheme: "http", Host: addr.String(), RawQuery: u.RawQuery()}
	out.ForceQuery = out.RawQuery == "" && strings.HasSuffix(u.String(), "?") // an empty query is kept
	if u.Scheme() == "https" {
		out.Scheme, out.Host = "https", hostPort(u.Host(), u.Port())
	}
	if !strings.HasPrefix(path, "//") {
		out.Opaque = path // sent as is
		return out, true
	}
	// An Opaque starting with "//" would be sent as an absolute URL; use Path and check that
	// net/url escapes it back to the same bytes.
	dec, err := url.PathUnescape(path)
	if err != nil {
		return nil, false
	}
	out.Path, out.RawPath = dec, path
	return out, out.EscapedPath() == path
}

var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopHeaders removes the hop-by-hop headers, those named in Connection included, and with
// them the proxy credential.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// isUpgrade reports whether a request asks to switch protocols (WebSocket, h2c).
func isUpgrade(h http.Header) bool {
	if len(h.Values("Upgrade")) > 0 {
		return true
	}
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), "upgrade") {
				return true
			}
		}
	}
	return false
}

// readErr remembers the error of the reader it wraps, so a failed upstream read can be told from
// a failed client write.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}
