package bridge

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// leaks is every counter a fixture page could move for key: canary hits, mutations on the site,
// and hits on the allowed page the bridge never asked for (key2).
func leaks(k string) int {
	return testFix.canaryN.Hits(k) + testFix.canaryN.Hits(key2(k)) + testFix.siteN.Mutations(k) +
		testFix.siteN.Hits(key2(k)) + testFix.otherN.Mutations(k)
}

func leakReport(k string) string {
	return fmt.Sprintf("canary %v %v, site mutations %d, unrequested %v", testFix.canaryN.Paths(k),
		testFix.canaryN.Paths(key2(k)), testFix.siteN.Mutations(k), testFix.siteN.Paths(key2(k)))
}

// egressCase is a fixture page that tries to reach the canary, send a write, or navigate on its
// own.
type egressCase struct {
	name string
	page string // testdata file, with an optional query
}

var egressCases = []egressCase{
	{"meta refresh off-site", "meta-refresh.html"},
	{"meta refresh to an allowed page", "meta-refresh-local.html"},
	{"meta refresh to a write route", "meta-refresh-mut.html"},
	{"refresh header off-site", "blank.html?refresh=canary"},
	{"refresh header to a write route", "blank.html?refresh=mut"},
	{"refresh header to an allowed page", "blank.html?refresh=local"},
	{"script navigation off-site", "script-nav.html"},
	{"script navigation to an allowed page", "script-nav-local.html"},
	{"frame navigates the top window", "script-nav-top.html"},
	{"history push and reload", "history-nav.html"},
	{"anchor click with ping", "anchor-ping.html"},
	{"form auto-submit GET to an allowed page", "form-get.html"},
	{"form auto-submit GET to a write route", "form-get-mut.html"},
	{"form auto-submit POST", "form-verb.html"},
	{"form auto-submit POST into a frame", "form-verb-frame.html"},
	{"subresources img script css font iframe prefetch fetch xhr beacon eventsource websocket", "subresources.html"},
	{"popups", "popup.html"},
	{"service worker", "service-worker.html"},
	{"worker websocket and fetch", "worker.html"},
	{"speculation rules prerender and prefetch", "prerender.html"},
}

// TestOutsideRoute opens a page whose requests Playwright's route does not see in Chromium:
// speculation-rules prerender and prefetch, fetchLater, keepalive requests sent while the page
// unloads, and workers' requests. Without an egress proxy the browser is launched against the
// bridge's refusing proxy, which is then the only guard: it must record them, and nothing may
// reach the canary or write to the site.
func TestOutsideRoute(t *testing.T) {
	t.Parallel()
	control := newKey()
	var wg sync.WaitGroup
	wg.Go(func() {
		plainVisitUntil(t, func() bool { return leaks(control) > 0 }, testFix.Site+"/p/"+control+"/escapes.html", testFix.Site+"/p/"+newKey()+"/blank.html")
	})
	s := newSession(t)
	k := newKey()
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+k+"/escapes.html"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/blank.html"); err != nil { // unload
		t.Fatal(err)
	}
	settle()
	wg.Wait()
	if leaks(control) == 0 {
		t.Fatalf("positive control: escapes.html reached nothing unguarded")
	}
	if got := leaks(k); got != 0 {
		t.Errorf("guarded escapes.html: got %d leaks (%s), want 0", got, leakReport(k))
	}
	var outside []string
	for _, d := range s.Decisions() {
		if d.Reason == ReasonOutsideRoute && (strings.Contains(d.URL(), k) || strings.Contains(d.URL(), strings.TrimPrefix(testFix.Canary, "http://"))) {
			outside = append(outside, d.Method+" "+d.URL())
		}
	}
	t.Logf("refused outside the route: %v", outside)
}

// egressResult is what happened to one case.
type egressResult struct {
	control, key string
	openErr      error
	pages        int
}

// runEgress loads every case twice: in an unguarded browser (the positive control: the fixture
// must reach its target, or the test could not fail) and in guarded sessions. Pages stay open
// for a dwell time each, so that their timers, refreshes and auto-submits fire while they are the
// current page; counters are read after a final settle.
func runEgress(t *testing.T, cases []egressCase, sessions int, opts ...Option) map[string]*egressResult {
	t.Helper()
	url := func(c egressCase, k string) string {
		return testFix.Site + "/p/" + k + "/" + c.page
	}
	res := map[string]*egressResult{}
	for _, c := range cases {
		res[c.name] = &egressResult{control: newKey(), key: newKey()}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3)
	for _, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctrl := res[c.name].control
			plainVisitUntil(t, func() bool { return leaks(ctrl) > 0 }, url(c, ctrl))
		})
	}
	var mu sync.Mutex
	for w := range sessions {
		wg.Go(func() {
			s := newSession(t, opts...)
			for i := w; i < len(cases); i += sessions {
				c := cases[i]
				r := res[c.name]
				_, err := s.Open(ctxT(t), url(c, r.key))
				time.Sleep(600 * time.Millisecond)
				mu.Lock()
				r.openErr, r.pages = err, len(s.bctx.Pages())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	settle()
	return res
}

// TestPageEgress checks that every counter stays at 0 for every fixture page, and that each page
// was really opened.
func TestPageEgress(t *testing.T) {
	t.Parallel()
	res := runEgress(t, egressCases, 3)
	for _, c := range egressCases {
		t.Run(c.name, func(t *testing.T) {
			r := res[c.name]
			if leaks(r.control) == 0 {
				t.Fatalf("positive control: %s reached nothing in an unguarded browser; the fixture cannot fail", c.page)
			}
			if r.openErr != nil {
				t.Fatalf("Open(%s): %v", c.page, r.openErr)
			}
			if got := leaks(r.key); got != 0 {
				t.Errorf("guarded %s: got %d leaks (%s), want 0", c.page, got, leakReport(r.key))
			}
			if r.pages != 1 {
				t.Errorf("guarded %s: got %d pages open, want 1 (popups closed)", c.page, r.pages)
			}
		})
	}
}

// TestWebRTC checks that ICE gathering never sends a STUN packet: the init script removes
// RTCPeerConnection (also in a fresh about:blank frame) and the flags keep UDP off.
func TestWebRTC(t *testing.T) {
	t.Parallel()
	control, err := newUDPCanary()
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	guarded, err := newUDPCanary()
	if err != nil {
		t.Fatal(err)
	}
	defer guarded.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		plainVisitUntil(t, func() bool { return control.Count() > 0 }, fmt.Sprintf("%s/p/%s/webrtc.html?udp=%d", testFix.Site, newKey(), control.Port()))
	})
	s := newSession(t)
	if _, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/webrtc.html?udp=%d", testFix.Site, newKey(), guarded.Port())); err != nil {
		t.Fatalf("Open: %v", err)
	}
	settle()
	wg.Wait()
	if control.Count() == 0 {
		t.Fatal("positive control: the unguarded browser sent no STUN packet; the fixture cannot fail")
	}
	if got := guarded.Count(); got != 0 {
		t.Errorf("guarded WebRTC: got %d STUN packets, want 0", got)
	}
}
