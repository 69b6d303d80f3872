package bridge

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The page's own view of its activity, from init.js, in every frame: the short timeouts it has
// pending, the requests it has in flight (a fetch until its body is read, an XMLHttpRequest until
// its loadend) and the credential watch, a MutationObserver that describes every editable element
// that appears or changes (never its value). A read is handed over only when the page showed no
// credential field before it and after it, "after" meaning once the page's requests, and the
// short timers their answers start, are over (quiet): a field a script adds when a fetch or an
// XHR answers, or when a frame loads, is on the page by then. The watch also reports a field that
// came and went between two checks.

//go:embed js/init.js
var initScript string

// watcher is the page's own view of its activity (init.js's watch, in every frame): it drains the
// watch and waits, with the route's activity, for the page to be quiet.
type watcher struct {
	cfg  *config
	name string // the watch function's name in the main world
	key  string // the key that drains the watch's descriptions
	act  *activity
}

// script is init.js for this session's watch.
func (w *watcher) script() string {
	return strings.NewReplacer("__BA_WATCH__", w.name, "__BA_KEY__", w.key).Replace(initScript)
}

// watchReport is what __BA_WATCH__ returns for one frame.
type watchReport struct {
	Timers   float64   `json:"timers"`   // ms until the last pending short timeout is due
	Inflight int       `json:"inflight"` // the page's requests not yet settled
	Loading  bool      `json:"loading"`  // the frame's document has not fired its load event yet
	Overflow bool      `json:"overflow"` // more descriptions than the watch keeps between drains
	Controls []control `json:"controls"` // editable elements seen since the last drain, as init.js describes them
}

// credential says why the report shows a credential field, or "".
func (r *watchReport) credential() string {
	for _, c := range r.Controls {
		if why := credentialField(c); why != "" {
			return why + ", seen by the watch"
		}
	}
	if r.Overflow {
		return "more editable fields changed than the credential watch keeps"
	}
	return ""
}

// docRef is the document node of one frame, in the session that renders it.
type docRef struct {
	t       *target
	backend int
}

// frame drains the watch of one frame: __BA_WATCH__ called with the session's key in the
// frame's main world (where init.js runs): by one Runtime.evaluate for the frame a session is
// rooted at, on its document node for a frame inside another's session. A frame init.js did not
// run in (an initial about:blank) reports nothing: the DOM and reader checks still cover it.
func (w *watcher) frame(ctx context.Context, v *pageView, frame string) (*watchReport, error) {
	d, ok := v.docs[frame]
	if !ok {
		return &watchReport{}, nil
	}
	var res struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	// The name is a non-configurable, non-writable global (init.js): a page can neither replace
	// it nor shadow it with a declaration of its own.
	if d.t.root == frame {
		// The session's own frame: one evaluation in its main world (Runtime.evaluate without a
		// context runs there), no node to resolve and no handle to release.
		key, _ := json.Marshal(w.key)
		if err := cdpCall(ctx, d.t.sess, "Runtime.evaluate", map[string]any{
			"expression":    "typeof " + w.name + " === 'function' ? " + w.name + "(" + string(key) + ") : ''",
			"returnByValue": true, "silent": true,
		}, &res); err != nil {
			return nil, err
		}
		return parseWatch(res.Result.Value)
	}
	group := evalGroup(evalSeq.Add(1))
	defer release(d.t.sess, group)
	var node struct {
		Object struct {
			ObjectID string `json:"objectId"`
		} `json:"object"`
	}
	// No executionContextId: the node is resolved in its frame's main world.
	if err := cdpCall(ctx, d.t.sess, "DOM.resolveNode", map[string]any{"backendNodeId": d.backend, "objectGroup": group}, &node); err != nil {
		return nil, err
	}
	fn := "function (k) { return typeof " + w.name + " === 'function' ? " + w.name + "(k) : ''; }"
	if err := cdpCall(ctx, d.t.sess, "Runtime.callFunctionOn", map[string]any{
		"functionDeclaration": fn, "objectId": node.Object.ObjectID, "arguments": []map[string]any{{"value": w.key}},
		"returnByValue": true, "objectGroup": group,
	}, &res); err != nil {
		return nil, err
	}
	return parseWatch(res.Result.Value)
}

// parseWatch reads what __BA_WATCH__ returned for one frame ("" when the frame has no watch).
func parseWatch(value string) (*watchReport, error) {
	r := &watchReport{}
	if value == "" {
		return r, nil
	}
	if err := json.Unmarshal([]byte(value), r); err != nil {
		return nil, fmt.Errorf("watch report: %w", err)
	}
	return r, nil
}

// maxQuietWait bounds quiet's wait for the page's requests and short timers.
const maxQuietWait = 1500 * time.Millisecond

// quietGrace is how long the route must have seen no request start or end, after since, before
// the page is asked what it still has pending: the answer of the last request reaches the page's
// callbacks in that time.
const quietGrace = 60 * time.Millisecond

// quiet drains the watch of every frame and, with wait, first waits (at most maxQuietWait) until
// the page is quiet: no request in the route's handlers for quietGrace after since, none in
// flight as any frame sees it, no short timer pending in any frame. It returns why the page is
// withheld when the watch saw a credential field, else "", and whether it waited for a timer.
// A frame whose watch cannot be read is logged (the DOM and reader checks still cover it).
func (w *watcher) quiet(ctx context.Context, v *pageView, since time.Time, wait bool) (why string, waited bool, err error) {
	defer w.cfg.took("quiet", time.Now())
	end := time.Now().Add(maxQuietWait)
	for {
		if wait {
			for time.Now().Before(end) {
				if w.act.idle(since, time.Now(), quietGrace) {
					break
				}
				if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
					return "", waited, err
				}
			}
		}
		var pending time.Duration
		busy := false
		for _, f := range v.frames {
			r, err := w.frame(ctx, v, f)
			if err != nil {
				if ctx.Err() != nil {
					return "", waited, err
				}
				w.cfg.logf("bridge: frame not watched: %v", err)
				continue
			}
			if why := r.credential(); why != "" {
				return why, waited, nil
			}
			if r.Timers > 0 && r.Timers == r.Timers {
				pending = max(pending, time.Duration(r.Timers*float64(time.Millisecond)))
			}
			busy = busy || r.Inflight > 0 || r.Loading
		}
		if !wait || (pending <= 0 && !busy) {
			return "", waited, nil
		}
		d := min(max(pending+10*time.Millisecond, 20*time.Millisecond), time.Until(end))
		if d <= 0 {
			return "", waited, nil
		}
		if err := sleepCtx(ctx, d); err != nil {
			return "", waited, err
		}
		waited = true
	}
}
