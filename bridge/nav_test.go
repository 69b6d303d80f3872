package bridge

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// TestOpenRedirects opens redirect chains. Every hop is decided as a new navigation; a denied hop,
// a chain over the hop cap and a loop stop before the next request, so the canary and the write
// routes are never reached.
func TestOpenRedirects(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	type want struct {
		err       error // sentinel matched with errors.Is; nil for success
		deniedHop int   // > 0: a *DeniedError for this hop
		hops      int
		statuses  []int
		finalPath string // path the page ended at
		text      string // text the page shows
		notHit    string // path (with {key}) the site must never see
	}
	tests := []struct {
		name    string
		path    string // with {key}
		control bool   // the chain reaches a leak in an unguarded browser
		want    want
	}{
		{name: "2 allowed hops", path: "/hop/{key}/2",
			want: want{hops: 2, statuses: []int{302, 302}, finalPath: "/hop/{key}/0", text: "Final page {key}"}},
		{name: "5 allowed hops at the cap", path: "/hop/{key}/5",
			want: want{hops: 5, finalPath: "/hop/{key}/0", text: "Final page {key}"}},
		{name: "307 chain kept", path: "/hop/{key}/2?code=307",
			want: want{hops: 2, statuses: []int{307, 307}, finalPath: "/hop/{key}/0?code=307", text: "Final page {key}"}},
		{name: "308 chain kept", path: "/hop/{key}/2?code=308",
			want: want{hops: 2, statuses: []int{308, 308}, finalPath: "/hop/{key}/0?code=308", text: "Final page {key}"}},
		{name: "6 hops over the cap", path: "/hop/{key}/6",
			want: want{err: ErrHopLimit, hops: 6, notHit: "/hop/{key}/0"}},
		{name: "loop", path: "/loop/{key}/a",
			want: want{err: ErrRedirectLoop, hops: 2}},
		{name: "off-site hop", path: "/go/{key}/offsite", control: true,
			want: want{deniedHop: 1, hops: 1}},
		{name: "off-site after an allowed hop", path: "/go/{key}/offsite2", control: true,
			want: want{deniedHop: 2, hops: 2}},
		{name: "allowed hops end at a write route", path: "/go/{key}/chain-mut", control: true,
			want: want{deniedHop: 3, hops: 3, notHit: "/records/{key}/delete"}},
		{name: "307 off-site", path: "/go/{key}/t307", control: true,
			want: want{deniedHop: 1, hops: 1}},
		{name: "308 to a write route", path: "/go/{key}/t308", control: true,
			want: want{deniedHop: 1, hops: 1, notHit: "/records/{key}/delete"}},
	}
	sub := func(s, k string) string { return strings.ReplaceAll(s, "{key}", k) }
	controls := map[string]string{}
	var wg sync.WaitGroup
	for _, tt := range tests {
		if tt.control {
			ck := newKey()
			controls[tt.name] = ck
			wg.Go(func() { plainVisit(t, testFix.Site+sub(tt.path, ck)) })
		}
	}
	keys := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKey()
			keys[tt.name] = k
			p, err := s.Open(ctxT(t), testFix.Site+sub(tt.path, k))
			w := tt.want
			switch {
			case w.deniedHop > 0:
				d, ok := IsDenied(err)
				if !ok {
					t.Fatalf("Open(%s): got err %v, want a denial at hop %d", tt.path, err, w.deniedHop)
				}
				if d.Hop != w.deniedHop {
					t.Errorf("Open(%s): got denied hop %d, want %d", tt.path, d.Hop, w.deniedHop)
				}
			case w.err != nil:
				if !errors.Is(err, w.err) {
					t.Fatalf("Open(%s): got err %v, want %v", tt.path, err, w.err)
				}
			default:
				if err != nil {
					t.Fatalf("Open(%s): %v", tt.path, err)
				}
				if got, want := p.URL, testFix.Site+sub(w.finalPath, k); got != want {
					t.Errorf("Open(%s) URL:\n\tgot  %s\n\twant %s", tt.path, got, want)
				}
				if !strings.Contains(p.Text, sub(w.text, k)) {
					t.Errorf("Open(%s) Text: got %q, want it to contain %q", tt.path, p.Text, sub(w.text, k))
				}
				for i, h := range p.Hops {
					if !h.Decision.Allowed() {
						t.Errorf("hop %d %s -> %s: got %v, want allow", i+1, h.From, h.To, h.Decision.Verdict)
					}
				}
			}
			if len(p.Hops) != w.hops {
				t.Errorf("Open(%s): got %d hops %+v, want %d", tt.path, len(p.Hops), p.Hops, w.hops)
			}
			if w.statuses != nil {
				var got []int
				for _, h := range p.Hops {
					got = append(got, h.Status)
				}
				if !slices.Equal(got, w.statuses) {
					t.Errorf("Open(%s) hop statuses: got %v, want %v", tt.path, got, w.statuses)
				}
			}
		})
	}
	wg.Wait()
	settle()
	for _, tt := range tests {
		t.Run(tt.name+" leaks", func(t *testing.T) {
			if ck, ok := controls[tt.name]; ok && leaks(ck) == 0 {
				t.Fatalf("positive control: %s reached nothing unguarded; the case cannot fail", tt.path)
			}
			k := keys[tt.name]
			if got := leaks(k); got != 0 {
				t.Errorf("Open(%s): got %d leaks (%s), want 0", tt.path, got, leakReport(k))
			}
			if n := tt.want.notHit; n != "" && slices.Contains(testFix.siteN.Paths(k), "GET "+sub(n, k)) {
				t.Errorf("Open(%s): the site saw %s, want never", tt.path, sub(n, k))
			}
		})
	}
}

// TestOpenDeniedFirst checks that a denied URL fails with hop 0 before any browser work: no
// request is made, by the bridge or the browser.
func TestOpenDeniedFirst(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	before := len(s.Decisions())
	k := newKey()
	tests := []struct {
		url, reason string
	}{
		{testFix.Canary + "/c/" + k + "/first", policy.ReasonPort},
		{testFix.Site + "/records/" + k + "/delete", policy.ReasonWriteWord},
		{testFix.Site + "/private/" + k, policy.ReasonNoRule},
		{"file:///etc/passwd", policy.ReasonScheme},
		{"javascript:alert(1)", policy.ReasonScheme},
	}
	for _, tt := range tests {
		p, err := s.Open(ctxT(t), tt.url)
		d, ok := IsDenied(err)
		if !ok {
			t.Errorf("Open(%s): got err %v, want a denial", tt.url, err)
			continue
		}
		if d.Hop != 0 || d.Decision.Reason != tt.reason {
			t.Errorf("Open(%s): got hop %d reason %q, want hop 0 reason %q", tt.url, d.Hop, d.Decision.Reason, tt.reason)
		}
		if p.URL != "" || p.Text != "" {
			t.Errorf("Open(%s): got page %+v, want empty", tt.url, p)
		}
	}
	if leaks(k)+testFix.siteN.Hits(k) != 0 {
		t.Errorf("denied Opens reached a server: %s", leakReport(k))
	}
	for _, d := range s.Decisions()[before:] {
		if d.ResourceType != "document" || d.Frame != FrameMain || d.Verdict != policy.Deny {
			t.Errorf("got decision %+v after denied Opens, want only the Open denials", d)
		}
	}
	if _, err := s.Read(ctxT(t), 0); !errors.Is(err, ErrNoPage) {
		t.Errorf("Read with no page: got %v, want ErrNoPage", err)
	}
}

// TestDecisionHook checks the hook sees every decision: the Open, subresources allowed and
// denied, with no query string.
func TestDecisionHook(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []RequestDecision
	)
	s := newSession(t, WithDecisionHook(func(d RequestDecision) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	}))
	k := newKey()
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+k+"/basic.html?secret=hunter2"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var sawOpen, sawCSS bool
	for _, d := range got {
		if strings.Contains(d.URL(), "?") || strings.Contains(d.URL(), "hunter2") {
			t.Errorf("decision URL %q carries a query", d.URL())
		}
		if d.URL() == testFix.Site+"/p/"+k+"/basic.html" && d.Method == http.MethodGet && d.Verdict == policy.Allow {
			sawOpen = true
		}
		if d.ResourceType == "stylesheet" && d.Verdict == policy.Allow {
			sawCSS = true
		}
	}
	if !sawOpen || !sawCSS {
		t.Errorf("hook: got %+v, want the Open and the stylesheet allowed", got)
	}
}

// TestSelfNavigation checks a page that replaces itself without a request (a blob: document) is
// not read.
func TestSelfNavigation(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	// untilChanged reads until the bridge reports the page changed (at most 15 s): no read on the
	// way may return the blob document's text.
	untilChanged := func(what string) {
		t.Helper()
		var (
			c   Chunk
			err error
		)
		changed := testutil.Eventually(15*time.Second, func() bool {
			c, err = s.Read(ctxT(t), 0)
			if strings.Contains(c.Text, "SECRET-BLOB") {
				t.Fatalf("Read after %s returned the blob document: %q", what, c.Text)
			}
			return errors.Is(err, ErrPageChanged)
		})
		if !changed {
			t.Fatalf("Read after %s: got %q, %v, want ErrPageChanged", what, c.Text, err)
		}
	}
	p, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/blob-nav.html")
	if strings.Contains(p.Text, "SECRET-BLOB") {
		t.Errorf("Open read the page's blob document: %q", p.Text)
	}
	if err == nil {
		untilChanged("a blob navigation") // it may land after Open returned
	} else if !errors.Is(err, ErrPageChanged) {
		t.Errorf("Open: got %v, want ErrPageChanged", err)
	}
	// The late one navigates 3 s after load, well after Open returns even on a loaded machine.
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/blob-nav.html?late=1"); err != nil {
		t.Fatalf("Open (late blob): %v", err)
	}
	untilChanged("a late blob navigation")
}

// TestReadDocumentReplaced: the page replaces its document (no request, so the route cannot stop
// it) while the bridge reads it, deterministically: the test hook between the reader's handles
// and its first evaluation navigates the page and waits until the new document is there, so the
// evaluation runs in an execution context that no longer exists. Open must say ErrPageChanged
// (not a raw protocol error) and give none of the new document's text. Two ways: a blob:
// document (the loaded failure) and about:blank (a variation the mapping was not written for).
func TestReadDocumentReplaced(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, nav, protocol string }{
		{"blob", `location.href = URL.createObjectURL(new Blob(['<p>SECRET-REPLACED</p>'], {type: 'text/html'}))`, "blob:"},
		{"about-blank", `location.href = 'about:blank'`, "about:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			replaced := false
			s := newSession(t, func(cfg *config) {
				cfg.resolved = func(ctx context.Context, sess CDPSession, group string) {
					once.Do(func() {
						if cdpCall(ctx, sess, "Runtime.evaluate", map[string]any{"expression": c.nav}, nil) != nil {
							return
						}
						replaced = testutil.Eventually(10*time.Second, func() bool {
							var r struct {
								Result struct {
									Value string `json:"value"`
								} `json:"result"`
							}
							err := cdpCall(ctx, sess, "Runtime.evaluate", map[string]any{"expression": "location.protocol", "returnByValue": true}, &r)
							return err == nil && r.Result.Value == c.protocol
						})
					})
				}
			})
			p, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/basic.html")
			if !replaced {
				t.Fatalf("the page was not replaced during the read: the test proves nothing (Open: %v)", err)
			}
			if strings.Contains(p.Text, "SECRET-REPLACED") {
				t.Errorf("Open read the replacing document: %q", p.Text)
			}
			if !errors.Is(err, ErrPageChanged) {
				t.Fatalf("Open: got %v, want ErrPageChanged", err)
			}
		})
	}
}
