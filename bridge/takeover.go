package bridge

import (
	"context"
	"errors"
	"fmt"
	"unicode"

	"github.com/mxschmitt/playwright-go"
)

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
	if !s.signInLease.Load() {
		return ErrNoLease
	}
	if err := s.usable(); err != nil {
		return err
	}
	s.op.Lock()
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
	if !s.signInLease.Load() {
		return nil, ErrNoLease
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	return s.page.Screenshot(playwright.PageScreenshotOptions{
		Type:    playwright.ScreenshotTypePng,
		Timeout: playwright.Float(msUntil(deadlineOf(ctx))),
	})
}
