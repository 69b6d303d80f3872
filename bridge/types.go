package bridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// Page is what opening a URL returns: the final document after every redirect hop was decided.
type Page struct {
	URL       string // final URL, canonical
	Title     string
	Heading   string // the visible text of the main frame's first visible h1, "" when none
	Status    int    // HTTP status of the final response
	Text      string
	Offset    int  // offset of Text in the page's visible text (0 for Open)
	Next      int  // offset to pass to Read for the next chunk
	More      bool // more visible text follows Text
	Truncated bool // the response body was over the body cap and was cut
	Hops      []Hop
	// Withheld counts the page's text runs not read because rendering did not prove them
	// visible (not shown after scrolling, or the pixel phase ran out of time); Unproven says why.
	Withheld int
	Unproven string
	// Invisible counts the code points of the page withheld because no font draws them (tag
	// characters, zero-width carriers, bidirectional overrides: package invisible).
	Invisible int
}

// WithheldNote is the sentence a tool result carries about withheld text, or "".
func (p Page) WithheldNote() string { return withheldNote(p.Withheld, p.Unproven, p.Invisible) }

func withheldNote(n int, why string, invisible int) string {
	var note string
	if n > 0 {
		note = fmt.Sprintf("%d passage(s) of this page were not read: their visibility could not be proven by rendering (%s); they are treated as not visible", n, why)
	}
	if invisible > 0 {
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("%d invisible character(s) were withheld: no font draws them (tag characters, zero-width or bidirectional controls), so no person reads them", invisible)
	}
	return note
}

// Hop is one redirect hop and the decision taken on it.
type Hop struct {
	From     string
	To       string
	Status   int
	Decision policy.Decision
}

// Chunk is a window of a page's visible text.
type Chunk struct {
	Text   string
	Offset int
	Next   int
	More   bool // more visible text follows, or is still to be proven visible by the next Read
	// Withheld and Unproven are the page's, as in Page, as far as it has been read.
	Withheld  int
	Unproven  string
	Invisible int
}

// WithheldNote is the sentence a tool result carries about withheld text, or "".
func (c Chunk) WithheldNote() string { return withheldNote(c.Withheld, c.Unproven, c.Invisible) }

// Link is an anchor on the current page, resolved and decided.
type Link struct {
	N       int    // 1-based number, stable for the page
	Text    string // visible text of the anchor
	URL     string // resolved, canonical URL ("" when it could not be parsed)
	Allowed bool
	Reason  string // the policy's reason phrase
}

// Field is a labelled value on the current page (dl/dt/dd, th/td, label/value).
type Field struct {
	Label string
	Value string
}

// Error is a sentinel error of the bridge.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrCredentialRequired means the page holds a credential field; nothing from it is returned.
	ErrCredentialRequired Error = "credential field on page"
	// ErrNoPage means no page is open yet.
	ErrNoPage Error = "no page open"
	// ErrHopLimit means a redirect chain went past the policy's hop cap.
	ErrHopLimit Error = "too many redirect hops"
	// ErrRedirectLoop means a redirect chain came back to a URL it had already visited.
	ErrRedirectLoop Error = "redirect loop"
)

// CredentialError is ErrCredentialRequired with what the bridge saw: the URL of the page and the
// field that made it withhold the page, in the bridge's own words (its kind, its input type and
// the signal: "input type=text with autocomplete one-time-code", "input type=text named by the
// words card number"), never a value or other text of the page. errors.Is(err,
// ErrCredentialRequired) holds for it.
type CredentialError struct {
	URL   string
	Field string
}

func (e *CredentialError) Error() string {
	if e.Field == "" {
		return string(ErrCredentialRequired)
	}
	return string(ErrCredentialRequired) + ": " + e.Field
}

// Is makes a CredentialError an ErrCredentialRequired.
func (e *CredentialError) Is(target error) bool { return target == ErrCredentialRequired }

// DeniedError is returned when the policy denied a navigation (the first URL or a redirect hop).
type DeniedError struct {
	URL      string
	Hop      int // 0 for the URL asked for, n for the n-th redirect target
	Decision policy.Decision
}

func (e *DeniedError) Error() string {
	if e.Hop > 0 {
		return fmt.Sprintf("redirect hop %d to %s denied: %s", e.Hop, e.URL, e.Decision.Reason)
	}
	return fmt.Sprintf("navigation to %s denied: %s", e.URL, e.Decision.Reason)
}

// IsDenied reports whether err is, or wraps, a policy denial, and returns it.
func IsDenied(err error) (*DeniedError, bool) {
	var d *DeniedError
	ok := errors.As(err, &d)
	return d, ok
}

// More sentinel errors of the bridge.
const (
	// ErrClosed means the session was closed.
	ErrClosed Error = "session closed"
	// ErrSessionExpired means the session's deadline passed; the browser has been stopped.
	ErrSessionExpired Error = "session deadline passed"
	// ErrUnsupportedContent means the final response of a navigation is not a document the bridge
	// reads (HTML, XHTML, XML, JSON or plain text); it was not handed to the browser.
	ErrUnsupportedContent Error = "unsupported content type"
	// ErrNotLaunched means the browser the driver returned could not be verified as the one this
	// session launched (its process, user data directory or version did not match).
	ErrNotLaunched Error = "browser not launched by this session"
	// ErrSetup means the driver or Chromium is missing; run scripts/setup.
	ErrSetup Error = "browser-agent setup incomplete"
	// ErrPageChanged means the page replaced its own document without a request the bridge could
	// decide (a blob:, data: or about:blank navigation); nothing from it is returned.
	ErrPageChanged Error = "page navigated away on its own"
)

// RequestDecision records one request the browser tried to make and what the bridge did with it:
// the shared decision record (Layer policy.LayerBrowser; Origin and Path without query or
// fragment) with where the request came from. It never holds page text, bodies or header values.
type RequestDecision struct {
	Time time.Time
	policy.Entry
	ResourceType string // document, stylesheet, image, script, fetch, xhr, websocket, ...
	Frame        string // FrameMain, FrameSub, FramePopup or FrameNone
	Hop          int    // redirect hop number, 0 for the request itself
}

// Where a request came from, as recorded in RequestDecision.Frame.
const (
	FrameMain  = "main"
	FrameSub   = "sub"
	FramePopup = "popup"
	FrameNone  = "none" // workers, or requests the browser could not attribute to a frame
)

// Reason phrases of the bridge's own denials (the policy's are policy.Reason*).
const (
	ReasonNotRequested  = "navigation not started by the bridge"
	ReasonPopup         = "popup"
	ReasonWebSocket     = "websocket"
	ReasonFrameCap      = "frame cap"
	ReasonHopLimit      = "redirect hop limit"
	ReasonRedirectLoop  = "redirect loop"
	ReasonRedirectNoLoc = "redirect without location"
	ReasonFetchFailed   = "fetch failed"
	ReasonClosed        = "session closed"
	ReasonOutsideRoute  = "request outside the route"
)
