package proxy

import (
	"io"
	"net/http"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// TestRunBytesBudget: the proxy counts the bytes it passes back; the request that spends the
// budget is finished, and every later one, CONNECT included, is denied with the budget's reason
// before anything is sent upstream, and recorded so.
func TestRunBytesBudget(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	p := startProxy(t, testPolicy(t, up, tlsUp), append(rec.options(), WithRunBytes(10_000))...)
	c := authClient(p)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, b, _ := get(t, c, up.URL+path)
		return resp, string(b)
	}
	for i := range 3 { // 4096 bytes each: the third passes 10 000
		if resp, body := get("/big"); resp.StatusCode != 200 || len(body) != 4096 {
			t.Fatalf("GET /big #%d under the budget: got %d, %d bytes; want 200, 4096", i+1, resp.StatusCode, len(body))
		}
	}
	waitFor(t, func() bool { return rec.mark() == 3 })
	if got := p.RunBytes(); got != 3*4096 {
		t.Errorf("RunBytes: got %d, want %d", got, 3*4096)
	}
	hits := up.hits.Load()
	mark := rec.mark()
	resp, _ := get("/records/1")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderError) != policy.ReasonBudgetRunBytes {
		t.Errorf("GET past the budget:\n\tgot  %d %q\n\twant 403 %q", resp.StatusCode, resp.Header.Get(HeaderError), policy.ReasonBudgetRunBytes)
	}
	d := rec.next(t, mark)
	if d.Allowed() || d.Reason != policy.ReasonBudgetRunBytes || d.Rule != "limits.max_run_bytes 10000" || d.Origin != up.URL || d.Path != "/records/1" {
		t.Errorf("decision past the budget:\n\tgot  %+v\n\twant deny, %q, rule limits.max_run_bytes 10000, %s/records/1", d, policy.ReasonBudgetRunBytes, up.URL)
	}
	target := tlsUp.Listener.Addr().String()
	cresp, _ := rawDo(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader(p)+"\r\n")
	if cresp.StatusCode != http.StatusForbidden || cresp.Header.Get(HeaderError) != policy.ReasonBudgetRunBytes {
		t.Errorf("CONNECT past the budget:\n\tgot  %d %q\n\twant 403 %q", cresp.StatusCode, cresp.Header.Get(HeaderError), policy.ReasonBudgetRunBytes)
	}
	if up.hits.Load() != hits || tlsUp.hits.Load() != 0 {
		t.Errorf("upstream hits past the budget: got %d and %d more, want none", up.hits.Load()-hits, tlsUp.hits.Load())
	}
}

// TestRunBytesDefault: without WithRunBytes the budget is the policy's limits.max_run_bytes.
func TestRunBytesDefault(t *testing.T) {
	pol, err := policy.Parse([]byte("version: 1\nsites:\n  - origin: http://127.0.0.1:1\n    read: [/]\nlimits:\n  max_run_bytes: 3MiB\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(pol)
	if err != nil {
		t.Fatal(err)
	}
	if p.budget.max != 3<<20 {
		t.Errorf("budget: got %d, want %d", p.budget.max, 3<<20)
	}
	if _, err := New(pol, WithRunBytes(-1)); err == nil {
		t.Errorf("New with WithRunBytes(-1): got no error")
	}
}

// TestTunneledBudget: inside an intercepted tunnel each response counts, and once the budget is
// spent the next request on the same open tunnel is denied with the budget's reason, before it
// reaches the upstream.
func TestTunneledBudget(t *testing.T) {
	up := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	rec := &recorder{}
	p := startProxy(t, mitmPolicy(t, up, tlsUp), append(rec.options(), WithUpstreamRoots(tlsUp.Certificate()), WithRunBytes(6000))...)
	c := &http.Client{Transport: mitmTransport(p)} // keeps its tunnel open between requests
	get := func() *http.Response {
		t.Helper()
		resp, err := c.Get(tlsUp.URL + "/big")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 2 { // 4096 bytes each: the second passes 6000
		if resp := get(); resp.StatusCode != 200 {
			t.Fatalf("GET /big #%d over https under the budget: got %d, want 200", i+1, resp.StatusCode)
		}
	}
	if got := p.RunBytes(); got != 2*4096 {
		t.Errorf("RunBytes: got %d, want %d", got, 2*4096)
	}
	hits := tlsUp.hits.Load()
	resp := get()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderError) != policy.ReasonBudgetRunBytes || tlsUp.hits.Load() != hits {
		t.Errorf("GET over https past the budget:\n\tgot  %d %q, %d more upstream hits\n\twant 403 %q, none", resp.StatusCode,
			resp.Header.Get(HeaderError), tlsUp.hits.Load()-hits, policy.ReasonBudgetRunBytes)
	}
	waitFor(t, func() bool {
		for _, d := range rec.decisions() {
			if d.Reason == policy.ReasonBudgetRunBytes && d.Origin == tlsUp.URL && d.Path == "/big" {
				return true
			}
		}
		return false
	})
}
