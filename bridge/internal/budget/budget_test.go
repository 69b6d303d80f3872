package budget

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// acquireLater asks b for a slot in a goroutine, for 10 s at most, and sends what Acquire
// returned.
func acquireLater(b *Budget) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := b.Acquire(ctx)
		done <- err
	}()
	return done
}

// TestRunBytes: the read that reaches max_run_bytes spends the budget; the body in progress is
// finished; every later fetch is refused with the budget spent.
func TestRunBytes(t *testing.T) {
	b := New(policy.Limits{MaxRunBytes: 10, MaxConcurrentRequests: 1}, 0)
	if e := b.Admit(); e != nil {
		t.Fatalf("a fresh budget refuses: %v", e)
	}
	release, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// A fetch waiting for the one slot is woken with the budget when the body in flight spends it.
	waiting := acquireLater(b)
	got, _ := io.ReadAll(b.Count(strings.NewReader("0123456789abc")))
	if string(got) != "0123456789abc" {
		t.Errorf("the body that crossed the limit was cut: %q", got)
	}
	werr := <-waiting
	e := b.Admit()
	if e == nil || e.Reason != policy.ReasonBudgetRunBytes || e.Limit != 10 || e.Proxy {
		t.Fatalf("after 13 of 10 bytes: Admit = %v, want the run bytes spent", e)
	}
	if b.Spent() != e || b.PageRequest() != e {
		t.Errorf("the spent budget is not final: Spent %v, PageRequest %v", b.Spent(), b.PageRequest())
	}
	if werr != e {
		t.Errorf("the fetch waiting for a slot when the body spent the budget: %v, want %v", werr, e)
	}
}

// TestPageRequests: the request past max_page_requests spends the budget; a new page resets the
// count only while no budget is spent.
func TestPageRequests(t *testing.T) {
	b := New(policy.Limits{MaxPageRequests: 2}, 0)
	for range 2 {
		if e := b.PageRequest(); e != nil {
			t.Fatalf("a request within the limit refused: %v", e)
		}
	}
	b.NewPage()
	for range 2 {
		if e := b.PageRequest(); e != nil {
			t.Fatalf("after NewPage, a request within the limit refused: %v", e)
		}
	}
	e := b.PageRequest()
	if e == nil || e.Reason != policy.ReasonBudgetPageRequests || e.Limit != 2 {
		t.Fatalf("the third request of a page: %v, want max_page_requests spent", e)
	}
	b.NewPage()
	if b.PageRequest() != e {
		t.Errorf("a new page after the budget was spent fetches again")
	}
}

// TestSlots: max_concurrent_requests fetches at once; the next waits for a release, ends with its
// context, and is woken with the budget when one is spent meanwhile.
func TestSlots(t *testing.T) {
	b := New(policy.Limits{MaxConcurrentRequests: 1}, 0)
	release, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(ctx); err != context.DeadlineExceeded {
		t.Errorf("a second fetch with the one slot taken: %v, want it to wait until its context ends", err)
	}
	release()
	r2, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	done := acquireLater(b)
	e := b.ProxyRefused()
	if err := <-done; err != e || !e.Proxy {
		t.Errorf("a waiting fetch when the proxy spent the budget: %v, want %v", err, e)
	}
	r2()
}

// TestGate: bodies under SmallBody pass freely; large ones share one body cap's worth.
func TestGate(t *testing.T) {
	b := New(policy.Limits{}, 1<<20)
	small, err := b.Gate(context.Background(), SmallBody-1)
	if err != nil {
		t.Fatal(err)
	}
	defer small()
	big, err := b.Gate(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Gate(ctx, SmallBody); err == nil {
		t.Errorf("a large body passed while a body cap's worth was being handed over")
	}
	if r, err := b.Gate(ctx, 10); err != nil {
		t.Errorf("a small body waited: %v", err)
	} else {
		r()
	}
	big()
	if r, err := b.Gate(context.Background(), 2<<20); err != nil {
		t.Errorf("after the release, a body over the cap (counted as the cap): %v", err)
	} else {
		r()
	}
}
