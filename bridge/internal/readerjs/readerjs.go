package readerjs

import (
	"fmt"
	"strconv"
	"strings"
)

// Run verdicts, one per text run of a frame, passed to the reader in "read" mode (opts.verdicts).
const (
	RunHidden   = 0 // proven hidden, or nothing to judge: not read
	RunVisible  = 1 // proven visible by this read's phase: its text is read now
	RunWithheld = 2 // not proven visible and never will be: not read, counted
	RunLater    = 4 // not decided yet: not read, not counted; a later read decides it
	RunServed   = 5 // visible, its text given by an earlier read: links, fields and the heading use it
)

// The reader's modes (opts.mode).
const (
	ModeCheck  = "check"  // the frame's editable elements only (the credential check)
	ModeRead   = "read"   // the editable elements and, in the same evaluation, the visible text, links and fields
	ModeLayout = "layout" // each run's boxes, the child frames' owners, what draws by itself
	ModePaint  = "paint"  // text paint toggled for the shots (opts.paint: one of the Paint modes)
	ModeScroll = "scroll" // the main frame scrolled to opts.y
	// ModeChanges: how many changes the page made since the job's watch began (the first layout
	// of the last read), every kind counted; -1 when no watch runs on this document.
	ModeChanges = "changes"
	// ModeBoxes: the boxes of some runs of the frame's last layout (opts.only: their indices), as
	// ModeLayout reports them, without walking the frame: whether a group's runs moved under its
	// shots (visibility.go, moved).
	ModeBoxes = "boxes"
)

// The paint modes of ModePaint (opts.paint).
const (
	PaintOff     = "off"     // all text paint transparent (four-frame proof, B)
	PaintForeign = "foreign" // only the paint of text that is not a run (four-frame proof, C)
	PaintOn      = "on"      // every paint the reader turned off put back
	PaintRuns    = "runs"    // exactly the runs' paint off (two-frame proof, D)
	PaintRestore = "restore" // undoes PaintRuns or PaintSome only
	// PaintSome turns off the paint of some runs only (opts.only: their indices; every run whose
	// parent's text paint changed with them is turned off too, and reported: off), so that a
	// pixel where two runs' boxes overlap tells which of them drew it (visibility.go, split).
	PaintSome = "some"
)

// Marks in a frame's text, private-use characters page text cannot carry (the reader drops them
// from it): where a child frame's text goes (FrameOpen, the frame's id, FrameClose), and a run an
// earlier read gave (ServedOpen, the run's text, ServedClose).
const (
	FrameOpen   = "\uE000"
	FrameClose  = "\uE001"
	ServedOpen  = "\uE002"
	ServedClose = "\uE003"
)

// Why a text node's characters were not handed out: the reasons of the reader's account (every
// text node of a frame is handed out, served by an earlier read, left for a later one, or
// withheld for one of these). The bridge gives the reasons of the runs the pixels withheld
// (opts.why); the reader finds the others.
const (
	WhyNotRendered = "not rendered"               // script, style, head, display: none, a frame owner's own children...
	WhyField       = "a form field's value"       // inputs, text areas, options, editable elements: never read
	WhyHidden      = "hidden"                     // the page's style or geometry, or the pixels: drawing it changes nothing a person sees
	WhyUnproven    = "not proven visible in time" // the pixel phase ran out of time before deciding it
	WhyNotShown    = "not shown by scrolling"     // still not shown after the scroll passes, or in a frame drawn transformed
	WhyMoved       = "moved under the shots"      // the page kept laying itself out again while it was shot
	WhyFrame       = "in a frame not read"        // a frame the page does not show, or not laid out
	WhyChanged     = "changed during the read"    // the page changed it (or where it is drawn) while or after the shots judged it
	WhyCap         = "past the text cap"          // the page's text is over the bridge's cap
	WhyLater       = "left for the next read"     // not withheld: a later read of the page decides it
)

// WhyFont withholds a run proven drawn whose web font does not draw its characters as themselves
// (js/reader/45_fonts.js: a lying font shows a person other text than the DOM holds).
const WhyFont = "drawn in a web font that draws other characters"

// DebugListCap bounds the withheld nodes one frame lists in debug mode.
const DebugListCap = 2000

// Const is one constant of the generated JavaScript file.
type Const struct {
	Name  string // the JavaScript name
	Value any    // an int or a string
}

// Consts are the constants the reader gets, in the generated file's order.
var Consts = []Const{
	{"RUN_HIDDEN", RunHidden}, {"RUN_VISIBLE", RunVisible}, {"RUN_WITHHELD", RunWithheld},
	{"RUN_LATER", RunLater}, {"RUN_SERVED", RunServed},
	{"MODE_CHECK", ModeCheck}, {"MODE_READ", ModeRead}, {"MODE_LAYOUT", ModeLayout},
	{"MODE_PAINT", ModePaint}, {"MODE_SCROLL", ModeScroll}, {"MODE_CHANGES", ModeChanges},
	{"MODE_BOXES", ModeBoxes},
	{"PAINT_OFF", PaintOff}, {"PAINT_FOREIGN", PaintForeign}, {"PAINT_ON", PaintOn},
	{"PAINT_RUNS", PaintRuns}, {"PAINT_RESTORE", PaintRestore}, {"PAINT_SOME", PaintSome},
	{"FRAME_OPEN", FrameOpen}, {"FRAME_CLOSE", FrameClose},
	{"SERVED_OPEN", ServedOpen}, {"SERVED_CLOSE", ServedClose},
	{"WHY_NOT_RENDERED", WhyNotRendered}, {"WHY_FIELD", WhyField}, {"WHY_HIDDEN", WhyHidden},
	{"WHY_UNPROVEN", WhyUnproven}, {"WHY_NOT_SHOWN", WhyNotShown}, {"WHY_MOVED", WhyMoved},
	{"WHY_FRAME", WhyFrame}, {"WHY_CHANGED", WhyChanged}, {"WHY_CAP", WhyCap}, {"WHY_LATER", WhyLater},
	{"WHY_FONT", WhyFont},
	{"DEBUG_LIST_CAP", DebugListCap},
}

// Header is the first line of the generated file.
const Header = "  // Code generated by go generate ./bridge from bridge/internal/readerjs. DO NOT EDIT.\n"

// JS is the generated file: one const declaration per constant, inside the reader's function
// (the files of bridge/js/reader are its body, joined in name order).
func JS() []byte {
	var b strings.Builder
	b.WriteString(Header)
	for _, c := range Consts {
		var v string
		switch x := c.Value.(type) {
		case int:
			v = strconv.Itoa(x)
		case string:
			v = jsString(x)
		default:
			panic(fmt.Sprintf("readerjs: %s: a %T is neither an int nor a string", c.Name, c.Value))
		}
		fmt.Fprintf(&b, "  const %s = %s;\n", c.Name, v)
	}
	return []byte(b.String())
}

// jsString quotes s for JavaScript: printable ASCII as is, everything else as \uXXXX.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			fmt.Fprintf(&b, "\\u{%X}", r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
