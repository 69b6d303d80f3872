package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// serveConnect establishes a tunnel to an https origin the policy names, records it, and
// intercepts it: every request inside is decided on its own (intercept).
func (p *Proxy) serveConnect(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *Decision, recorded func()) {
	u, rule, reason := p.decideConnect(r.Host)
	note := ""
	if u != nil {
		rec.Origin = u.Origin()
		note = noteKeyOrigin(hostPort(normalizeHost(u.Host()), u.Port()))
	}
	if reason == "" && isUpgrade(r.Header) {
		rule, reason = "upgrade on CONNECT", ReasonUpgrade
	}
	if reason != "" {
		p.refuse(w, rec, http.StatusForbidden, reason, rule, note)
		return
	}
	addr, arule, areason := p.checkAddress(ctx, u.Host(), u.Port())
	if areason != "" {
		p.refuse(w, rec, http.StatusForbidden, areason, arule, note)
		return
	}
	if !p.acquire() {
		p.refuse(w, rec, http.StatusServiceUnavailable, ReasonTooMany, "", "")
		return
	}
	defer p.release()
	rec.Verdict, rec.Rule, rec.Reason, rec.Addr = policy.Allow, rule, ReasonOriginAllowed, addr.String()
	p.decided(rec)

	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.upstreamFailed(w, rec, fmt.Errorf("hijack: %w", err))
		return
	}
	if !p.life.track(client) {
		client.Close()
		rec.Error = ErrClosed.Error()
		return
	}
	defer p.life.untrack(client)
	defer client.Close()
	client.SetDeadline(time.Time{})
	rec.Status = http.StatusOK
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		rec.Error = "writing to client: " + policy.Text(err.Error(), policy.MaxTextLen)
		return
	}
	recorded()
	// Bytes the client sent after its CONNECT header, before it saw the 200.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		early = bytes.Clone(b)
	}
	t := tunnel{origin: u.Origin(), host: normalizeHost(u.Host())}
	if err := p.intercept(ctx, client, early, t); err != nil {
		p.cfg.logf("proxy: tunnel to %s: %s", t.origin, policy.Text(err.Error(), policy.MaxTextLen))
	}
}

// decideConnect decides a CONNECT authority at the origin level: host and port must be those of
// an https site of the policy. u is nil when the authority does not parse.
func (p *Proxy) decideConnect(authority string) (u *policy.URL, rule, reason string) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil || host == "" || port == "" || strings.ContainsAny(authority, "/?#@\\ \t") {
		return nil, "connect target is not host:port", policy.ReasonMalformed
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, "connect port is not 1-65535", policy.ReasonMalformed
	}
	u, err = policy.ParseURL("https://"+authority+"/", "")
	if err != nil {
		return nil, "connect target is not host:port", policy.ReasonMalformed
	}
	h := normalizeHost(u.Host())
	key := hostPort(h, u.Port())
	if origin, ok := p.https[key]; ok {
		return u, origin + " connect", ""
	}
	if p.httpSites[key] {
		// A tunnel to an http origin could only carry a WebSocket (Chromium tunnels ws:// too).
		return u, "connect to an http origin", policy.ReasonScheme
	}
	if p.hosts[h] {
		return u, "", policy.ReasonPort
	}
	return u, "", policy.ReasonHost
}
