package proxy

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// TestHold: with WithHold a POST, PUT or PATCH to a URL the policy reads is held, shown whole to the hold
// function (its digest bound to method, URL and body) and sent, exactly as shown, once, only when
// approved; refused, nothing reaches the site. Writes the policy refuses for more than being a
// write stay refused without a hold, and so does DELETE, whatever its URL. Over http and inside an intercepted https tunnel. The
// positive control: without the hold the same POST is refused as a write.
func TestHold(t *testing.T) {
	up := newSignInUpstream(t, false)
	tlsUp := newSignInUpstream(t, true)
	pol := twoSitePolicy(t, "hold.yaml", "read: [/, /search, \"/records/{id}\"]", up, tlsUp)
	var mu sync.Mutex
	var held []Held
	approve := map[string]bool{} // digests a person approved
	hold := func(ctx context.Context, h *Held) string {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, *h)
		if approve[h.Digest] {
			delete(approve, h.Digest) // an approval releases one request
			return ""
		}
		return ReasonHeldRefused
	}
	rec := &recorder{}
	p := startProxy(t, pol, append(rec.options(), WithUpstreamRoots(tlsUp.Certificate()), WithHold(hold))...)
	plain := startProxy(t, pol, WithUpstreamRoots(tlsUp.Certificate()))
	for _, tc := range []struct {
		name       string
		c, control *http.Client
		up         *signInUpstream
	}{
		{"http", authClient(p), authClient(plain), up},
		{"https", &http.Client{Transport: mitmTransport(p)}, &http.Client{Transport: mitmTransport(plain)}, tlsUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := func(c *http.Client, method, path, body string) (int, string) {
				t.Helper()
				return sendForm(t, c, method, tc.up.URL+path, body)
			}
			const form = "q=tea&from=2026-12-24"
			for i, m := range []string{"POST", "PUT", "PATCH"} {
				// Positive control: without the hold, the write is refused as a write.
				if st, why := do(tc.control, m, "/search", form); st != 403 || why != policy.ReasonWriteMethod {
					t.Errorf("%s without the hold: %d %q, want 403 %q", m, st, why, policy.ReasonWriteMethod)
				}
				// Unapproved: held, shown whole, refused; nothing reaches the site.
				if st, why := do(tc.c, m, "/search", form); st != 403 || why != ReasonHeldRefused {
					t.Errorf("unapproved %s: %d %q, want 403 %q", m, st, why, ReasonHeldRefused)
				}
				if n := tc.up.count(); n != i {
					t.Fatalf("%d writes reached the site, want %d: the unapproved %s reached it", n, i, m)
				}
				mu.Lock()
				h := held[len(held)-1]
				want := Digest(m, tc.up.URL+"/search", []byte(form))
				if h.Method != m || h.URL != tc.up.URL+"/search" || string(h.Body) != form || h.Digest != want {
					t.Errorf("held %s %s %q %s, want %s %s/search %q %s", h.Method, h.URL, h.Body, h.Digest, m, tc.up.URL, form, want)
				}
				// A person approves that digest: exactly one request, exactly those bytes.
				approve[want] = true
				mu.Unlock()
				if st, why := do(tc.c, m, "/search", form); st != 200 || why != "" {
					t.Errorf("approved %s: %d %q, want 200", m, st, why)
				}
				// The approval was used: the same request again is held and refused; so is one
				// whose body differs from what was approved.
				mu.Lock()
				approve[want] = true
				mu.Unlock()
				if st, why := do(tc.c, m, "/search", form+"&to=2027-01-02"); st != 403 || why != ReasonHeldRefused {
					t.Errorf("%s with another body: %d %q, want 403 %q", m, st, why, ReasonHeldRefused)
				}
				mu.Lock()
				delete(approve, want)
				mu.Unlock()
				if st, why := do(tc.c, m, "/search", form); st != 403 || why != ReasonHeldRefused {
					t.Errorf("%s again after its approval was used: %d %q, want 403 %q", m, st, why, ReasonHeldRefused)
				}
				if n := tc.up.count(); n != i+1 || tc.up.writes[i] != m+" /search "+form {
					t.Errorf("site writes %q, want exactly the approved %s as write %d", tc.up.writes, m, i+1)
				}
			}
			// Writes refused for more than being a write are never held.
			mu.Lock()
			before := len(held)
			mu.Unlock()
			expectRefused(t, "with the hold", func(method, path, body string) (int, string) { return do(tc.c, method, path, body) }, form, []refusal{
				{"POST", "/other", policy.ReasonNoRule},
				{"POST", "/checkout", policy.ReasonWriteWord},
				{"POST", "/search?next=delete", policy.ReasonWriteWord},
				{"PUT", "/checkout", policy.ReasonWriteWord},
				{"PATCH", "/records/1/remove", policy.ReasonWriteWord},
				{"DELETE", "/records/1", policy.ReasonWriteMethod},
				{"DELETE", "/search", policy.ReasonWriteMethod},
				{"OPTIONS", "/search", policy.ReasonWriteMethod},
			})
			mu.Lock()
			if len(held) != before {
				t.Errorf("%d refused writes were held, want 0", len(held)-before)
			}
			mu.Unlock()
		})
	}
}
