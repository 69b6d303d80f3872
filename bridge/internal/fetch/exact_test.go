package fetch

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// TestExactURL: the request target is the canonical path and query the policy decided, byte for
// byte, in origin form, or in absolute form through a proxy (plain http) and for a path that
// starts with "//"; a URL with userinfo is refused.
func TestExactURL(t *testing.T) {
	for _, c := range []struct {
		raw      string
		viaProxy bool
		want     string // the request target net/http writes
	}{
		{raw: "http://a.test/records/1", want: "/records/1"},
		{raw: "http://a.test/a|b^c/%7C?q=x|y^z&r=%41", want: "/a|b^c/%7C?q=x|y^z&r=%41"},
		{raw: "https://a.test:8443/p?", want: "/p?"},
		{raw: "http://a.test/records/1?x=1", viaProxy: true, want: "http://a.test/records/1?x=1"},
		{raw: "https://a.test/records/1", viaProxy: true, want: "/records/1"}, // a CONNECT tunnel: origin form inside
		{raw: "https://a.test//double", want: "https://a.test//double"},
	} {
		canon, err := policy.ParseURL(c.raw, "")
		if err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		u, err := ExactURL(c.raw, c.viaProxy)
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if got := u.RequestURI(); got != c.want {
			t.Errorf("%s (proxy %v): request target %q, want %q", c.raw, c.viaProxy, got, c.want)
		}
		if u.Scheme != canon.Scheme() || u.Scheme+"://"+u.Host != canon.Origin() {
			t.Errorf("%s: sent to %s://%s, want %s", c.raw, u.Scheme, u.Host, canon.Origin())
		}
	}
	if _, err := ExactURL("http://user:pw@a.test/", false); err == nil {
		t.Error("a URL with userinfo was not refused")
	}
}

// TestReadCapped: at most limit bytes, and whether there was more, whatever length the response
// declared (none, too short, too long).
func TestReadCapped(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	for _, c := range []struct {
		name          string
		n, limit, dec int64
		want          int
		more          bool
	}{
		{name: "under the limit", n: 100, limit: 200, dec: -1, want: 100},
		{name: "at the limit", n: 100, limit: 100, dec: 100, want: 100},
		{name: "over the limit", n: 100, limit: 40, dec: -1, want: 40, more: true},
		{name: "declared shorter than it is", n: 100, limit: 200, dec: 10, want: 100},
		{name: "declared longer than the limit", n: 100, limit: 40, dec: 1 << 40, want: 40, more: true},
		{name: "empty", n: 0, limit: 40, dec: 0, want: 0},
	} {
		b, more, err := ReadCapped(bytes.NewReader(body[:c.n]), c.limit, c.dec)
		if err != nil || len(b) != c.want || more != c.more {
			t.Errorf("%s: %d bytes, more %v, err %v; want %d, %v", c.name, len(b), more, err, c.want, c.more)
		}
	}
	if _, _, err := ReadCapped(io.MultiReader(bytes.NewReader(body[:5]), errReader{}), 40, -1); err == nil {
		t.Error("a read error was not returned")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("reset") }

func TestProxyReason(t *testing.T) {
	for s, want := range map[string]string{
		"budget run bytes":         "budget run bytes",
		"":                         "",
		"Denied":                   "",
		"denied <b>":               "",
		strings.Repeat("a", 65):    "",
		"upstream certificate bad": "upstream certificate bad",
	} {
		if got := proxyReason(s); got != want {
			t.Errorf("proxyReason(%q) = %q, want %q", s, got, want)
		}
	}
}
