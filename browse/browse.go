package browse

import (
	"errors"
	"fmt"
	"sort"
	"strings"

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
	// Account is what became of the page's text so far (see Account); WithheldRuns lists each
	// withheld text node when the session was launched with WithWithheldList.
	Account      Account
	WithheldRuns []WithheldRun
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

// Account is what became of the text of a page, as far as it has been read: every text node of
// the page (every frame read, open and closed shadow roots included) is handed out in the page's
// text, left for a later read, or withheld for a reason (readerjs.Why*: not rendered, a form
// field's value, hidden, not proven visible in time, ...). Counts are characters other than
// white space (Unicode White_Space, as JavaScript's \s), so that the law holds whatever the
// whitespace: Handed + Pending + the sum of Withheld is the characters of every text node.
type Account struct {
	Handed   int            `json:"handed"`
	Pending  int            `json:"pending,omitempty"`
	Withheld map[string]int `json:"withheld,omitempty"`
	// Frames counts the frames whose text is counted (the main frame and each child frame read
	// or counted as not read); FramesLost those the bridge could not reach at all (no session,
	// or an error), whose text is in no count.
	Frames     int `json:"frames"`
	FramesLost int `json:"frames_lost,omitempty"`
}

// Total is the characters the account covers.
func (a Account) Total() int { return a.Handed + a.Pending + a.WithheldTotal() }

// WithheldTotal is the characters withheld, for every reason.
func (a Account) WithheldTotal() int {
	n := 0
	for _, v := range a.Withheld {
		n += v
	}
	return n
}

// Add adds b to a.
func (a *Account) Add(b Account) {
	a.Handed += b.Handed
	a.Pending += b.Pending
	a.Frames += b.Frames
	a.FramesLost += b.FramesLost
	for k, v := range b.Withheld {
		a.Withhold(k, v)
	}
}

// Withhold counts n characters withheld for why.
func (a *Account) Withhold(why string, n int) {
	if n <= 0 {
		return
	}
	if a.Withheld == nil {
		a.Withheld = map[string]int{}
	}
	a.Withheld[why] += n
}

// Note is the sentence a read result carries about the account: how much of the page was
// handed out so far and how much withheld, by reason. end says the page is read to its end:
// the sentence then says how much of the page was withheld in all.
func (a Account) Note(end bool) string {
	reasons := make([]string, 0, len(a.Withheld))
	for k := range a.Withheld {
		reasons = append(reasons, k)
	}
	sort.Slice(reasons, func(i, k int) bool {
		if a.Withheld[reasons[i]] != a.Withheld[reasons[k]] {
			return a.Withheld[reasons[i]] > a.Withheld[reasons[k]]
		}
		return reasons[i] < reasons[k]
	})
	var parts []string
	for _, k := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", a.Withheld[k], k))
	}
	by := ""
	if len(parts) > 0 {
		by = " (" + strings.Join(parts, ", ") + ")"
	}
	lost := ""
	if a.FramesLost > 0 {
		lost = fmt.Sprintf("; %d frame(s) could not be reached and are in no count", a.FramesLost)
	}
	if end {
		return fmt.Sprintf("end of page: %d characters handed out; %d characters of the page withheld in all%s%s", a.Handed, a.WithheldTotal(), by, lost)
	}
	pending := ""
	if a.Pending > 0 {
		pending = fmt.Sprintf("; %d not decided yet (the next read goes on)", a.Pending)
	}
	return fmt.Sprintf("%d characters handed out so far; %d withheld%s%s%s", a.Handed, a.WithheldTotal(), by, pending, lost)
}

// WithheldRun is one text node a read withheld, listed when the session was launched with
// WithWithheldList: why (readerjs.Why*), the reader's detail, its characters, its parent's
// tag and its box (x, y, width, height in CSS px, the frame's page coordinates). Never its text:
// withheld text reaches no one.
type WithheldRun struct {
	Frame  string     `json:"frame,omitempty"` // "" for the main frame
	Reason string     `json:"reason"`
	Detail string     `json:"detail,omitempty"`
	Chars  int        `json:"chars"`
	Tag    string     `json:"tag,omitempty"`
	Box    [4]float64 `json:"box"`
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
	// Account and WithheldRuns are the page's, as in Page, as far as it has been read.
	Account      Account
	WithheldRuns []WithheldRun
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

// Error is a sentinel error of a browser (the bridge's).
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

// More sentinel errors of a browser.
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

// BudgetError means a run budget of the policy's limits is spent. The session refuses all further
// work with it.
type BudgetError struct {
	Reason string // policy.ReasonBudgetRunBytes or policy.ReasonBudgetPageRequests
	Limit  int64  // the limit that was reached
	Proxy  bool   // the egress proxy, counting on its own, refused the request
}

// Rule names the policy limit, e.g. "limits.max_run_bytes 134217728".
func (e *BudgetError) Rule() string {
	key := "max_run_bytes"
	if e.Reason == policy.ReasonBudgetPageRequests {
		key = "max_page_requests"
	}
	return fmt.Sprintf("limits.%s %d", key, e.Limit)
}

func (e *BudgetError) Error() string {
	by := ""
	if e.Proxy {
		by = " at the egress proxy"
	}
	return fmt.Sprintf("%s spent%s (%s)", e.Reason, by, e.Rule())
}

// IsBudget reports whether err is, or wraps, a spent budget, and returns it.
func IsBudget(err error) (*BudgetError, bool) {
	var b *BudgetError
	ok := errors.As(err, &b)
	return b, ok
}

// EgressError is a request the egress proxy refused, or failed (an upstream certificate that does
// not verify, an upstream down), as the bridge's fetcher saw it.
type EgressError struct {
	Host   string // host[:port] of the request
	Status int
	Reason string // the proxy's reason phrase
}

// EgressHeader is the header in which the egress proxy names why it refused or failed a request
// itself (EgressError's Reason): the proxy sets it, the bridge's fetcher reads it.
const EgressHeader = "X-Browser-Agent-Error"

func (e *EgressError) Error() string {
	return fmt.Sprintf("egress proxy: %s: %s (status %d)", e.Reason, e.Host, e.Status)
}

// Reason phrases of a browser's own denials that a run names (the bridge has more: bridge.Reason*).
const (
	ReasonHopLimit     = "redirect hop limit"
	ReasonRedirectLoop = "redirect loop"
)
