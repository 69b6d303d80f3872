package bench

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"testing"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/proxy"
)

// BenchmarkLookupHTTPS is BenchmarkLookup with the demo site served over https (a loopback
// server with a certificate authority made for it). The guarded side's proxy intercepts every
// tunnel and verifies the site against that authority (WithUpstreamRoots); the plain side's
// Chromium trusts the site's key (--ignore-certificate-errors-spki-list), as the guarded Chromium
// trusts the proxy's.
//
//	go test ./bench -run '^$' -bench LookupHTTPS -benchtime 10x -count 5
func BenchmarkLookupHTTPS(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := demosite.New(demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	srv, ca := testutil.NewTLSServer(site.Handler())
	defer srv.Close()
	leaf, err := x509.ParseCertificate(srv.TLS.Certificates[0].Certificate[0])
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	spki := "--ignore-certificate-errors-spki-list=" + base64.StdEncoding.EncodeToString(sum[:])
	lookupOn(b, ctx, srv.URL, []proxy.Option{proxy.WithUpstreamRoots(ca)}, []string{spki})
}
