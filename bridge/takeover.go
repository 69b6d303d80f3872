package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/mxschmitt/playwright-go"
)

// lease is the sign-in takeover lease: whether a person holds it (the serve layer sets it), the
// sign-in writes sent under it, and the main-frame navigation a sign-in write answered, which the
// end of the lease waits for.
type lease struct {
	held   atomic.Bool
	writes atomic.Int64
	// commits counts the main frame's committed navigations; navMark is its value when a sign-in
	// write answered a main-frame navigation, so that the end of the lease waits for that
	// navigation to commit (0: none pending).
	commits, navMark atomic.Int64
}

// wrote counts a sign-in write that went out and was answered; mainDoc: it was a main-frame
// navigation, whose commit the end of the lease waits for.
func (l *lease) wrote(mainDoc bool) {
	if mainDoc {
		l.navMark.Store(l.commits.Load() + 1)
	}
	l.writes.Add(1)
}

// SetSignInLease tells the session whether a person holds a takeover lease on its browser. While
// held, a write the page makes to a sign-in route the policy names (policy.DecideSignIn) is sent,
// with its body, even as a main-frame navigation; every other write and navigation stays denied.
// Ending the lease forgets the page the agent had opened: a person acted on it, so nothing is read
// from it until the agent opens a page again. Only the serve layer calls this; no tool reaches it.
func (s *Session) SetSignInLease(held bool) {
	s.lease.held.Store(held)
	if !held {
		s.pages.set(nil)
		// Let what the person started (a sign-in submission being answered) finish before the
		// agent's next Open navigates the page, so that it does not interrupt it. Bounded.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for s.life.usable() == nil && s.act.busy() && sleepCtx(ctx, 20*time.Millisecond) == nil {
		}
		// A sign-in submission answered as a page navigation has not always committed yet: the
		// agent's next Open would be interrupted by it.
		if mark := s.lease.navMark.Swap(0); mark > 0 {
			for s.life.usable() == nil && s.lease.commits.Load() < mark && sleepCtx(ctx, 20*time.Millisecond) == nil {
			}
		}
		s.lockOp(ctx, false)
		if s.life.usable() == nil {
			_ = s.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: playwright.Float(5000)})
		}
		s.op.Unlock()
		_ = s.act.settle(ctx, s.cfg.settle)
	}
}

// SignInWrites counts the sign-in writes the session has sent under a lease.
func (s *Session) SignInWrites() int64 { return s.lease.writes.Load() }

// ErrNoLease is returned by the takeover methods while no sign-in lease is held.
var ErrNoLease = errors.New("no takeover lease is held")

// Input is one input event a person sends to the page while holding the takeover lease: a click
// at a point of the viewport, a named key, or printable text typed into the focused field. It is
// given to the page as mouse and keyboard events and never recorded.
type Input struct {
	Kind string  // "click", "key" or "text"
	X, Y float64 // click: fractions 0..1 of the viewport's width and height
	Key  string  // key: one of TakeoverKeys
	Text string  // text: printable characters, at most MaxTakeoverText
}

// TakeoverKeys are the keys a person may press by name.
var TakeoverKeys = map[string]bool{
	"Enter": true, "Tab": true, "Backspace": true, "Delete": true, "Escape": true,
	"ArrowLeft": true, "ArrowRight": true, "ArrowUp": true, "ArrowDown": true, "Home": true, "End": true,
	"Shift+Tab": true,
}

// MaxTakeoverText bounds the text of one text input.
const MaxTakeoverText = 256

// Validate checks an input: a known kind, a point inside the viewport, a key by name, printable
// text. The error never quotes the text.
func (in Input) Validate() error {
	switch in.Kind {
	case "click":
		if !(in.X >= 0 && in.X <= 1 && in.Y >= 0 && in.Y <= 1) {
			return errors.New("click: x and y must be fractions 0..1 of the frame")
		}
	case "key":
		if !TakeoverKeys[in.Key] {
			return errors.New("key: not one of the keys a person may press by name")
		}
	case "text":
		if in.Text == "" || len([]rune(in.Text)) > MaxTakeoverText {
			return fmt.Errorf("text: 1..%d characters", MaxTakeoverText)
		}
		for _, r := range in.Text {
			if !unicode.IsPrint(r) {
				return errors.New("text: printable characters only")
			}
		}
	default:
		return errors.New(`kind must be "click", "key" or "text"`)
	}
	return nil
}

// TakeoverInput gives one input event to the page, only while the sign-in lease is held. It
// moves no other tab, starts no navigation and runs no script: what the page does in answer is
// decided like every request it makes.
func (s *Session) TakeoverInput(ctx context.Context, in Input) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if !s.lease.held.Load() {
		return ErrNoLease
	}
	if err := s.life.usable(); err != nil {
		return err
	}
	s.lockOp(ctx, false)
	defer s.op.Unlock()
	switch in.Kind {
	case "click":
		vp := s.page.ViewportSize()
		if vp == nil {
			return errors.New("click: no viewport")
		}
		return s.page.Mouse().Click(in.X*float64(vp.Width), in.Y*float64(vp.Height))
	case "key":
		return s.page.Keyboard().Press(in.Key)
	default:
		return s.page.Keyboard().InsertText(in.Text)
	}
}

// TakeoverScreenshot is a PNG of the viewport for the person holding the lease, the sign-in page
// included; while no lease is held it returns ErrNoLease. The caller shows it to that person
// only: never to spectators, a recording or the audit.
func (s *Session) TakeoverScreenshot(ctx context.Context) ([]byte, error) {
	if !s.lease.held.Load() {
		return nil, ErrNoLease
	}
	if err := s.life.usable(); err != nil {
		return nil, err
	}
	s.lockOp(ctx, false)
	defer s.op.Unlock()
	return s.page.Screenshot(playwright.PageScreenshotOptions{
		Type:    playwright.ScreenshotTypePng,
		Timeout: playwright.Float(msUntil(deadlineOf(ctx))),
	})
}
