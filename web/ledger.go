package web

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/runner"
)

// Why a recorded run plays instead of a live one.
const (
	WhySpendCap = "daily model-spend cap reached"
	WhyLedger   = "spend ledger unavailable"
	// WhyRecordedOnly: the server was started in recorded-only mode.
	WhyRecordedOnly = "recorded-only mode"
)

// spendBook is the server's side of the spend ledger: the spend not yet written to it, under its
// own lock. Every check for a live run writes that spend out first, so a charge the ledger could
// not take stops live runs until it is written. With no ledger it allows no live run.
type spendBook struct {
	ledger runner.Ledger // nil: no ledger, no live run
	cap    float64
	clock  func() time.Time
	logf   func(string, ...any)

	mu     sync.Mutex
	unpaid map[string]float64 // spend not yet written to the ledger, by day
}

// liveAllowed checks the spend ledger before a live run. Anything but a readable ledger under the
// cap, with every charge written, means no live run: it fails closed.
func (s *Server) liveAllowed(ctx context.Context) (bool, string) {
	if s.recordedOnly {
		return false, WhyRecordedOnly
	}
	return s.spend.allowed(ctx)
}

// allowed is liveAllowed for the ledger.
func (b *spendBook) allowed(ctx context.Context) (bool, string) {
	if b.ledger == nil {
		return false, WhyLedger
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.flushLocked(ctx); err != nil {
		b.logf("web: spend ledger: %v", err)
		return false, WhyLedger
	}
	spent, err := b.ledger.SpendOn(ctx, audit.Day(b.clock()))
	if err != nil || math.IsNaN(spent) {
		b.logf("web: spend ledger: %v", err)
		return false, WhyLedger
	}
	if spent >= b.cap {
		return false, WhySpendCap
	}
	return true, ""
}

// charge adds a live run's model spend to the ledger. An amount the ledger cannot take is kept,
// on its day, and live runs stop until it is written.
func (b *spendBook) charge(usd float64) {
	if b.ledger == nil || !(usd > 0) || math.IsInf(usd, 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unpaid == nil {
		b.unpaid = map[string]float64{}
	}
	b.unpaid[audit.Day(b.clock())] += usd
	if err := b.flushLocked(context.Background()); err != nil {
		b.logf("web: spend ledger: charging $%.4f: %v", usd, err)
	}
}

// flushLocked writes the unpaid amounts to the ledger. b.mu is held.
func (b *spendBook) flushLocked(ctx context.Context) error {
	for day, usd := range b.unpaid {
		if err := b.ledger.AddSpend(ctx, day, usd); err != nil {
			return err
		}
		delete(b.unpaid, day)
	}
	return nil
}

// unpaidDays is the number of days with spend not yet in the ledger.
func (b *spendBook) unpaidDays() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.unpaid)
}

// unpaidCount is the number of days with spend not yet in the ledger.
func (s *Server) unpaidCount() int { return s.spend.unpaidDays() }
