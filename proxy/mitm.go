package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// TLS interception. The proxy terminates the TLS of every tunnel it allows, with a leaf
// certificate it mints for the tunnel's host, and decides each request inside as it decides a
// plain-HTTP one; it then sends the request over its own, fully verified, TLS connection.
//
// The authority is made in memory by New and lives as long as the Proxy: its key is never
// written anywhere, and nothing but this process and the run's Chromium (which trusts exactly the
// leaf key, see ChromiumArgs) and bridge (RootCAs) ever trusts it.

// ReasonUpstreamCert is the X-Browser-Agent-Error reason of a request whose upstream presented a
// certificate that does not verify; the response body names the host.
const ReasonUpstreamCert = "upstream certificate not verified"

// leafValidity is how long a minted leaf is valid; a run is far shorter.
const leafValidity = 7 * 24 * time.Hour

// authority is the run's certificate authority and the one key all its leaves share.
type authority struct {
	caCert  *x509.Certificate
	caKey   *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey
	spki    string // base64 SHA-256 of the leaf key's SubjectPublicKeyInfo

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // canonical host → leaf; only hosts of allowed CONNECTs
	minted int
}

func newAuthority() (*authority, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"browser-agent"}, CommonName: "browser-agent run " + rand.Text()[:8]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(leafValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	spki, err := x509.MarshalPKIXPublicKey(&leafKey.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spki)
	return &authority{
		caCert: caCert, caKey: caKey, leafKey: leafKey,
		spki:   base64.StdEncoding.EncodeToString(sum[:]),
		leaves: map[string]*tls.Certificate{},
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// leaf returns the certificate for host (canonical: lower case, IPv6 in brackets), minting it
// on first use.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[host]; ok {
		return c, nil
	}
	now := time.Now()
	name := strings.Trim(host, "[]")
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, &a.leafKey.PublicKey, a.caKey)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.caCert.Raw}, PrivateKey: a.leafKey, Leaf: leaf}
	a.leaves[host] = c
	a.minted++
	return c, nil
}

// mintedHosts is the hosts a leaf was minted for, for tests.
func (a *authority) mintedHosts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for h := range a.leaves {
		out = append(out, h)
	}
	return out
}

// CACert is the run's certificate authority. Every leaf the proxy presents inside a tunnel is
// signed by it; its key exists only in this process's memory.
func (p *Proxy) CACert() *x509.Certificate { return p.ca.caCert }

// RootCAs is a pool holding only the run's authority: the TLS client configuration of a client
// that goes through this proxy to https origins (the bridge's fetcher) and should trust nothing
// else.
func (p *Proxy) RootCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.caCert)
	return pool
}

// SPKIHash is the base64 SHA-256 hash of the SubjectPublicKeyInfo of the key every leaf shares,
// the value of Chromium's --ignore-certificate-errors-spki-list.
func (p *Proxy) SPKIHash() string { return p.ca.spki }

// upstreamTLS is the TLS client configuration of the proxy's own connections to https origins:
// the system roots and the WithUpstreamRoots certificates, full verification, TLS 1.2 or later.
func upstreamTLS(extra []*x509.Certificate) (*tls.Config, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		if len(extra) == 0 {
			return nil, fmt.Errorf("proxy: no system roots and no upstream roots: %v", err)
		}
		roots = x509.NewCertPool()
	}
	for _, c := range extra {
		roots.AddCert(c)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}, nil
}

// checkedAddrKey carries the address checkAddress chose to the TLS transport's dialer.
type checkedAddrKey struct{}

// dialChecked dials the address the request's context carries, never the name the transport
// asks for: the connection pool is keyed by origin (so that SNI and the verified name are the
// origin's host), and a new connection goes to the address checked for this very request.
func (p *Proxy) dialChecked(ctx context.Context, network, _ string) (net.Conn, error) {
	addr, ok := ctx.Value(checkedAddrKey{}).(netip.AddrPort)
	if !ok {
		return nil, errors.New("proxy: refusing to dial: no checked address")
	}
	return p.dial(ctx, network, addr.String())
}

// tunnel is one intercepted CONNECT: the origin it was allowed for, the place where the requests
// inside it are decided.
type tunnel struct {
	origin string // https://host[:port], canonical
	host   string // canonical host
}

// intercept terminates the client's TLS on an established tunnel and serves the requests inside
// it, each decided and recorded on its own, until the client closes, the tunnel is idle for the
// idle timeout, or the proxy closes. conn is the hijacked client connection; early holds bytes
// the client sent before it saw the 200.
func (p *Proxy) intercept(ctx context.Context, conn net.Conn, early []byte, t tunnel) error {
	var raw net.Conn = conn
	if len(early) > 0 {
		raw = &prefixConn{Conn: conn, r: io.MultiReader(bytes.NewReader(early), conn)}
	}
	cert, err := p.ca.leaf(t.host)
	if err != nil {
		return fmt.Errorf("minting a certificate for %s: %w", t.host, err)
	}
	want := strings.Trim(t.host, "[]")
	tc := tls.Server(raw, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}, // no HTTP/2: every request is read as HTTP/1.1
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && normalizeHost(hello.ServerName) != want {
				return nil, fmt.Errorf("server name %q is not the tunnel's host %s", policy.Cut(hello.ServerName, 64), t.host)
			}
			return cert, nil
		},
	})
	conn.SetDeadline(time.Now().Add(p.cfg.timeouts.ReadHeader))
	if err := tc.HandshakeContext(ctx); err != nil {
		tc.Close()
		return fmt.Errorf("TLS handshake with the client: %w", err)
	}
	conn.SetDeadline(time.Time{})
	tconn := &tunnelConn{Conn: tc, closed: make(chan struct{})}
	ln := &tunnelListener{conn: make(chan net.Conn, 1), done: make(chan struct{}), addr: conn.LocalAddr()}
	ln.conn <- tconn
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serveTunneled(w, r, t) }),
		ReadHeaderTimeout: p.cfg.timeouts.ReadHeader,
		IdleTimeout:       p.cfg.timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(p.cfg.logf), "proxy: tunnel: ", 0),
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	<-tconn.closed
	ln.Close()
	<-served
	return nil
}

// serveTunneled decides one request read inside an intercepted tunnel.
func (p *Proxy) serveTunneled(w http.ResponseWriter, r *http.Request, t tunnel) {
	start := time.Now()
	if !p.life.enter() {
		p.stats.deny(ReasonClosed)
		writeRefusal(w, http.StatusServiceUnavailable, ReasonClosed, r.Method)
		return
	}
	defer p.life.leave()
	rec := &Decision{Time: start, Entry: policy.Entry{Method: policy.Cut(r.Method, 32), Layer: policy.LayerProxy, Origin: t.origin}}
	defer p.finish(rec, start)
	if p.refuseOverBudget(w, r, rec) {
		return
	}
	ctx, cancel := p.requestContext(r.Context())
	defer cancel()

	raw := r.RequestURI
	switch {
	case strings.HasPrefix(raw, "/"):
		raw = t.origin + raw
	case strings.HasPrefix(strings.ToLower(raw), "https://"):
		// Absolute form inside a tunnel: allowed only for the tunnel's own origin, checked below.
	default:
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonMalformed, "request target is not a path", "")
		return
	}
	u, err := policy.ParseURL(raw, "")
	if err != nil {
		d, _ := p.pol.Decide(policy.DecideArgs{Method: r.Method, URL: raw})
		p.refuse(w, rec, http.StatusForbidden, d.Reason, d.Rule, "")
		return
	}
	if u.Origin() != t.origin {
		rec.Origin, rec.Path = u.Origin(), u.Path()
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonHost, "request for another origin inside the tunnel to "+t.origin, "")
		return
	}
	if h, err := policy.ParseURL("https://"+r.Host+"/", ""); err != nil || h.Origin() != t.origin {
		rec.Path = u.Path()
		p.refuse(w, rec, http.StatusForbidden, policy.ReasonHost, "Host header is not the tunnel's origin", "")
		return
	}
	p.serveURL(ctx, w, r, rec, u, "https")
}

// isCertError reports whether err is the upstream's certificate failing verification.
func isCertError(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// prefixConn reads the bytes the client sent early before those still on the connection.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// tunnelConn tells intercept when the server is done with the connection.
type tunnelConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *tunnelConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

// tunnelListener hands one connection to an http.Server, then blocks until closed.
type tunnelListener struct {
	conn chan net.Conn
	once sync.Once
	done chan struct{}
	addr net.Addr
}

func (l *tunnelListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conn:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tunnelListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *tunnelListener) Addr() net.Addr { return l.addr }
