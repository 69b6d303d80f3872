package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// budgetSession launches a session for the fixture's policy with extra limits.
func budgetSession(t *testing.T, limits string, opts ...Option) *Session {
	t.Helper()
	pol, err := policy.Parse([]byte(testFix.policyYAML+limits), "fixture with budgets")
	if err != nil {
		t.Fatal(err)
	}
	return launchFor(t, pol, opts...)
}

func launchFor(t *testing.T, pol *policy.Policy, opts ...Option) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := testRT.Launch(ctx, pol, opts...)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// bigHits counts the fixture's /big requests of a scenario.
func bigHits(k string) int {
	n := 0
	for _, p := range testFix.siteN.Paths(k) {
		if strings.HasPrefix(p, "GET /big/") {
			n++
		}
	}
	return n
}

func budgetDenials(s *Session, reason string) int {
	n := 0
	for _, d := range s.Decisions() {
		if d.Verdict == policy.Deny && d.Reason == reason {
			n++
		}
	}
	return n
}

// TestRunBytesBudget: a page of eight 250 kB images under a 1 MiB run budget. The body that spends
// the budget is finished; every request after it is denied with the budget's reason, Open
// returns the *BudgetError, and the session refuses all later work without fetching anything.
// Positive control: the same page under the default budget fetches all eight.
func TestRunBytesBudget(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		s := newSession(t)
		k := newKey()
		if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+k+"/budget.html"); err != nil {
			t.Fatalf("Open under the default budget: %v", err)
		}
		// The images may still be loading when the page is read.
		if !testutil.Eventually(15*time.Second, func() bool { return bigHits(k) == 8 }) {
			t.Errorf("images fetched under the default budget: got %d, want 8", bigHits(k))
		}
	})
	s := budgetSession(t, "  max_run_bytes: 1MiB\n  max_concurrent_requests: 2\n")
	k := newKey()
	_, err := s.Open(ctxT(t), testFix.Site+"/p/"+k+"/budget.html")
	be, ok := IsBudget(err)
	if !ok || be.Reason != policy.ReasonBudgetRunBytes || be.Limit != 1<<20 || be.Proxy {
		t.Fatalf("Open past the run budget:\n\tgot  %v\n\twant a *BudgetError %q, limit 1 MiB", err, policy.ReasonBudgetRunBytes)
	}
	// About 250 kB each: the fifth passes 1 MiB, and with two fetch slots at most one more was in
	// flight by then.
	if got := bigHits(k); got < 4 || got > 6 {
		t.Errorf("images fetched: got %d, want 4 to 6 of 8", got)
	}
	if got := budgetDenials(s, policy.ReasonBudgetRunBytes); got == 0 {
		t.Errorf("no request decision denied with %q", policy.ReasonBudgetRunBytes)
	}
	before := testFix.siteN.Total()
	k2 := newKey()
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+k2+"/basic.html"); !errors.As(err, &be) {
		t.Errorf("Open after the budget is spent: got %v, want the *BudgetError", err)
	}
	if _, err := s.Read(ctxT(t), 0); !errors.As(err, &be) {
		t.Errorf("Read after the budget is spent: got %v, want the *BudgetError", err)
	}
	if got := testFix.siteN.Hits(k2); got != 0 {
		t.Errorf("requests sent after the budget was spent: got %d (%d in all), want 0", got, testFix.siteN.Total()-before)
	}
}

// TestPageRequestsBudget: with max_page_requests 3, the fourth image of the page is denied with
// the budget's reason, only three are fetched, and Open returns the *BudgetError.
func TestPageRequestsBudget(t *testing.T) {
	t.Parallel()
	s := budgetSession(t, "  max_page_requests: 3\n")
	k := newKey()
	_, err := s.Open(ctxT(t), testFix.Site+"/p/"+k+"/budget.html")
	be, ok := IsBudget(err)
	if !ok || be.Reason != policy.ReasonBudgetPageRequests || be.Limit != 3 {
		t.Fatalf("Open past the page's request budget:\n\tgot  %v\n\twant a *BudgetError %q, limit 3", err, policy.ReasonBudgetPageRequests)
	}
	if got := bigHits(k); got != 3 {
		t.Errorf("images fetched: got %d (%v), want 3", got, testFix.siteN.Paths(k))
	}
	if got := budgetDenials(s, policy.ReasonBudgetPageRequests); got == 0 {
		t.Errorf("no request decision denied with %q", policy.ReasonBudgetPageRequests)
	}
}

// TestFetchSlots: with max_concurrent_requests 2, a page of eight slow images never has more than
// two fetches in flight at the site, and still gets all eight (the others wait; nothing is
// denied). The site's count of requests in flight is the measure; reaching two is the positive
// control that the page does fetch in parallel.
func TestFetchSlots(t *testing.T) {
	t.Parallel()
	var now, peak, total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<title>slots</title><p>slots</p>")
			for i := range 8 {
				fmt.Fprintf(w, "<img src=\"/img/%d\">", i)
			}
			return
		}
		total.Add(1)
		n := now.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
		now.Add(-1)
		w.Header().Set("Content-Type", "image/gif")
		fmt.Fprint(w, "GIF89a")
	}))
	defer srv.Close()
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/page, /img/*]\nlimits:\n  max_concurrent_requests: 2\n", srv.URL)), "slots")
	if err != nil {
		t.Fatal(err)
	}
	s := launchFor(t, pol, WithSettle(3*time.Second))
	if _, err := s.Open(ctxT(t), srv.URL+"/page"); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !testutil.Eventually(15*time.Second, func() bool { return total.Load() == 8 }) {
		t.Errorf("images fetched: got %d, want 8", total.Load())
	}
	if got := peak.Load(); got != 2 {
		t.Errorf("image fetches in flight at once: got %d, want 2", got)
	}
}

// TestProxyBudgetRefusal: a 403 of the run's proxy naming the run-bytes budget spends the
// session's budget (Proxy set); another refusal reason, or the header from a site reached
// without a proxy, does not.
func TestProxyBudgetRefusal(t *testing.T) {
	t.Parallel()
	refusing := func(reason string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(browse.EgressHeader, reason)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "browser-agent proxy denied")
		}))
	}
	budgetProxy := refusing(policy.ReasonBudgetRunBytes)
	defer budgetProxy.Close()
	s := newSession(t, WithProxy(budgetProxy.URL, "", ""))
	_, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/basic.html")
	if be, ok := IsBudget(err); !ok || !be.Proxy || be.Reason != policy.ReasonBudgetRunBytes {
		t.Errorf("Open through a proxy refusing for the run's bytes:\n\tgot  %v\n\twant a *BudgetError from the proxy", err)
	}

	otherProxy := refusing(policy.ReasonWriteWord)
	defer otherProxy.Close()
	s = newSession(t, WithProxy(otherProxy.URL, "", ""))
	// The proxy's 403 is then an ordinary response, handed to the browser as the page.
	if _, err := s.Open(ctxT(t), testFix.Site+"/p/"+newKey()+"/basic.html"); err != nil {
		if _, ok := IsBudget(err); ok {
			t.Errorf("Open through a proxy refusing with %q: got a *BudgetError %v", policy.ReasonWriteWord, err)
		}
	}

	// A site is not the proxy: without WithProxy, the header on its own 403 is not trusted.
	site := refusing(policy.ReasonBudgetRunBytes)
	defer site.Close()
	pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/]\n", site.URL)), "site")
	if err != nil {
		t.Fatal(err)
	}
	s = launchFor(t, pol)
	if _, err := s.Open(ctxT(t), site.URL+"/"); err != nil {
		if _, ok := IsBudget(err); ok {
			t.Errorf("Open of a site sending the proxy's header: got a *BudgetError %v", err)
		}
	}
}
