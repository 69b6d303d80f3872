package bridge

import (
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
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
	ReasonHopLimit      = browse.ReasonHopLimit
	ReasonRedirectLoop  = browse.ReasonRedirectLoop
	ReasonRedirectNoLoc = "redirect without location"
	ReasonFetchFailed   = "fetch failed"
	ReasonClosed        = "session closed"
	ReasonOutsideRoute  = "request outside the route"
)
