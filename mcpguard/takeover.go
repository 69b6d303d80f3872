package mcpguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/policy"
)

// Takeover through the guard (issues 42 and 43, docs/guard.md): the guard owns the browser, so a
// person can take the wheel on a loopback page of its own (a per-run token in its path): a live
// view of the tab (screenshots over the guard's own DevTools session) and their clicks, keys and
// text given to it as input events. While a person holds the lease every tool call is refused and
// the egress proxy lets a write through to a sign-in route the policy names (the lease of
// proxy.SetSignInLease), so the person signs in themselves. What they type goes to the browser
// only: it is not logged, not recorded, and no note quotes it; the credential watch still
// withholds a result that shows a filled credential field. After hand-back the next result says
// the page was changed by a person, and the refs shown before are void.

// RuleTakeover is the rule of a call refused while a person has the wheel, and of the audit's
// takeover begin and end.
const RuleTakeover = "guard.takeover"

// Takeover lease times: a lease ends when its holder sends nothing for takeoverIdle (input renews
// it), and takeoverMax after it was taken in any case: a forgotten lease does not keep the
// sign-in route open or the client refused.
const (
	takeoverIdle = 2 * time.Minute
	takeoverMax  = 10 * time.Minute
)

// ChangedByPerson is the note on the client's next result after a person handed the wheel back.
const ChangedByPerson = "the page was changed by a person (takeover): the refs you were shown before are void, take a new snapshot"

// takeover is the guard's takeover page and its one lease.
type takeover struct {
	g     *Guard
	token string
	srv   *http.Server
	url   string
	stop  chan struct{}

	mu      sync.Mutex
	held    bool
	expires time.Time // idle end; renewed by input
	hardEnd time.Time
	inputs  int  // input events under the current lease: a count, never their content
	changed bool // a lease ended since the client's last result: its next result says so
	page    string
}

// startTakeover serves the takeover page on addr (loopback by default). It needs the guard's own
// browser: with the wall off the upstream launched its browser and the guard has no session on it.
func startTakeover(g *Guard, addr string) (*takeover, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	t := &takeover{g: g, token: hex.EncodeToString(b), stop: make(chan struct{})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("takeover page: %w", err)
	}
	mux := http.NewServeMux()
	p := "/" + t.token + "/"
	mux.HandleFunc("GET "+p, t.pageHTML)
	mux.HandleFunc("GET "+p+"state", t.state)
	mux.HandleFunc("POST "+p+"take", t.take)
	mux.HandleFunc("POST "+p+"release", t.release)
	mux.HandleFunc("POST "+p+"input", t.input)
	mux.HandleFunc("GET "+p+"frame", t.frame)
	t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	t.url = "http://" + ln.Addr().String() + p
	go t.srv.Serve(ln)
	go t.expire()
	return t, nil
}

func (t *takeover) close() {
	if t == nil {
		return
	}
	close(t.stop)
	t.srv.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		t.held = false
		t.g.px.SetSignInLease(false)
	}
}

// expire ends a lease its holder left: idle too long, or held past its maximum.
func (t *takeover) expire() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		t.mu.Lock()
		now := time.Now()
		over := t.held && (now.After(t.expires) || now.After(t.hardEnd))
		t.mu.Unlock()
		if over {
			t.end("the lease expired")
		}
	}
}

// gate refuses a call while a person has the wheel, and a page-changing call that names a ref
// from before the last hand-back. Called with g.mu held.
func (t *takeover) gate(name string) *verdict {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		return refuse(RuleTakeover, "a person has the wheel (takeover): every call is refused until they hand back")
	}
	if t.changed && slices.Contains(refTools, name) {
		return refuse(RuleRef, "%s", ChangedByPerson)
	}
	return nil
}

// after notes the page a result names (the tab the person is shown) and returns the note for
// the client when a person changed the page since its last result. Called with g.mu held.
func (t *takeover) after(text string) []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if u := pageURL(text); u != "" {
		t.page = u
	}
	if !t.changed {
		return nil
	}
	t.changed = false
	return []string{ChangedByPerson}
}

// audit records a takeover's begin or end as a step of the run: metadata only (who, how many
// input events), never what was typed.
func (t *takeover) audit(reason string) {
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.step++
	v := &verdict{allow: true, layer: policy.LayerCoordinator, rule: RuleTakeover, reason: reason}
	if err := g.record(context.Background(), nil, g.step, "takeover", v, 0, nil); err != nil {
		g.cfg.Logf("guard: takeover: audit store: %v", err)
	}
}

// take is POST take: a person takes the wheel. It waits for the call in flight (g.mu), so the
// client's calls and the person's input never interleave.
func (t *takeover) take(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if !t.begin() {
		http.Error(w, "a person already has the wheel", http.StatusConflict)
		return
	}
	t.g.cfg.Logf("guard: takeover: a person has the wheel; the client's calls are refused")
	t.audit("takeover begins: a person has the wheel")
	writeJSONTo(w, map[string]any{"held": true, "idle_seconds": int(takeoverIdle / time.Second), "max_seconds": int(takeoverMax / time.Second)})
}

// begin begins the lease unless a person holds it: the client's calls are refused from now on
// and the proxy's sign-in lease is set.
func (t *takeover) begin() bool {
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		return false
	}
	now := time.Now()
	t.held, t.expires, t.hardEnd, t.inputs = true, now.Add(takeoverIdle), now.Add(takeoverMax), 0
	t.g.px.SetSignInLease(true)
	return true
}

// release is POST release: the person hands back.
func (t *takeover) release(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if !t.end("handed back by the person") {
		http.Error(w, "nobody has the wheel", http.StatusConflict)
		return
	}
	writeJSONTo(w, map[string]any{"held": false})
}

// end ends the lease: the sign-in route is closed again, the refs the client was shown are void
// and its next result says a person changed the page.
func (t *takeover) end(why string) bool {
	n, ok := t.finish()
	if !ok {
		return false
	}
	t.g.cfg.Logf("guard: takeover ends (%s, %d input events); the client's next result says a person changed the page", why, n)
	t.audit(fmt.Sprintf("takeover ends: %s (%d input events)", why, n))
	return true
}

// finish ends the lease if a person holds it, and returns the number of its input events.
func (t *takeover) finish() (int, bool) {
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.held {
		return 0, false
	}
	t.held, t.changed = false, true
	t.g.px.SetSignInLease(false)
	t.g.shown = map[string]string{}
	return t.inputs, true
}

// holding says whether a person holds the lease now, and renews its idle end when renew is set.
func (t *takeover) holding(renew bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.held || now.After(t.expires) || now.After(t.hardEnd) {
		return false
	}
	if renew {
		t.inputs++
		t.expires = now.Add(takeoverIdle)
		if t.expires.After(t.hardEnd) {
			t.expires = t.hardEnd
		}
	}
	return true
}

// state is GET state: whether a person has the wheel.
func (t *takeover) state(w http.ResponseWriter, r *http.Request) {
	writeJSONTo(w, map[string]any{"held": t.holding(false)})
}

// takeoverInput is the body of POST input: bridge.Input's fields (a click at fractions of the
// frame, a key by name, or text). Its text is given to the page and never kept.
type takeoverInput struct {
	Kind string  `json:"kind"`
	X    float64 `json:"x,omitempty"`
	Y    float64 `json:"y,omitempty"`
	Key  string  `json:"key,omitempty"`
	Text string  `json:"text,omitempty"`
}

// input is POST input: one input event of the person's to the tab. Errors never quote the text.
func (t *takeover) input(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "send the input as application/json", http.StatusUnsupportedMediaType)
		return
	}
	var req takeoverInput
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, `the body must be one JSON object: {"kind": "click", "x": 0.5, "y": 0.5}, {"kind": "key", "key": "Enter"} or {"kind": "text", "text": "..."}`, http.StatusBadRequest)
		return
	}
	in := bridge.Input{Kind: req.Kind, X: req.X, Y: req.Y, Key: req.Key, Text: req.Text}
	if err := in.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !t.holding(true) {
		http.Error(w, "nobody has the wheel: take it first", http.StatusConflict)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := t.dispatch(ctx, in); err != nil {
		// The error is the browser's about the event, never the event's text.
		http.Error(w, "the browser did not take the input", http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// frame is GET frame: a PNG of the tab, for the person holding the lease only: it may show what
// they typed into a field that is not masked, so it is never logged, recorded or sent to the client.
func (t *takeover) frame(w http.ResponseWriter, r *http.Request) {
	if !t.holding(false) {
		http.Error(w, "nobody has the wheel: take it first", http.StatusConflict)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var shot struct {
		Data []byte `json:"data"`
	}
	err := t.onTab(ctx, func(s string) error {
		return t.g.browser.cdp.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	})
	if err != nil {
		http.Error(w, "no frame: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(shot.Data)
}

// onTab runs f on a DevTools session attached to the tab the person is shown: the page the
// client's last result named, else the one page that is not blank.
func (t *takeover) onTab(ctx context.Context, f func(session string) error) error {
	cdp := t.g.browser.cdp
	tis, err := t.g.browser.targets(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	want := t.page
	t.mu.Unlock()
	var named, other []string
	for _, ti := range tis {
		switch {
		case ti.Type != "page":
		case want != "" && ti.URL == want:
			named = append(named, ti.ID)
		case ti.URL != "about:blank":
			other = append(other, ti.ID)
		}
	}
	var target string
	switch {
	case len(named) > 0:
		target = named[0]
	case len(other) == 1:
		target = other[0]
	default:
		return fmt.Errorf("%d tabs open: the guard does not know which one to show", len(other))
	}
	var att struct {
		Session string `json:"sessionId"`
	}
	if err := cdp.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att); err != nil {
		return err
	}
	defer cdp.call(context.WithoutCancel(ctx), "", "Target.detachFromTarget", map[string]any{"sessionId": att.Session}, nil)
	return f(att.Session)
}

// keyCodes are the Windows virtual key codes of bridge.TakeoverKeys, which Chromium needs for a
// key to act (Enter to submit, Tab to move focus).
var keyCodes = map[string]int{
	"Enter": 13, "Tab": 9, "Backspace": 8, "Delete": 46, "Escape": 27,
	"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Home": 36, "End": 35,
}

// dispatch gives one input event to the tab as the browser's own input (Input.dispatch*,
// Input.insertText): it runs no script in the page.
func (t *takeover) dispatch(ctx context.Context, in bridge.Input) error {
	cdp := t.g.browser.cdp
	return t.onTab(ctx, func(s string) error {
		switch in.Kind {
		case "click":
			var m struct {
				VP struct {
					W float64 `json:"clientWidth"`
					H float64 `json:"clientHeight"`
				} `json:"cssLayoutViewport"`
			}
			if err := cdp.call(ctx, s, "Page.getLayoutMetrics", nil, &m); err != nil {
				return err
			}
			x, y := in.X*m.VP.W, in.Y*m.VP.H
			for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
				p := map[string]any{"type": typ, "x": x, "y": y}
				if typ != "mouseMoved" {
					p["button"], p["clickCount"] = "left", 1
				}
				if err := cdp.call(ctx, s, "Input.dispatchMouseEvent", p, nil); err != nil {
					return err
				}
			}
			return nil
		case "key":
			key, mods := in.Key, 0
			if k, ok := strings.CutPrefix(key, "Shift+"); ok {
				key, mods = k, 8
			}
			down := map[string]any{"type": "rawKeyDown", "key": key, "code": key, "windowsVirtualKeyCode": keyCodes[key], "modifiers": mods}
			if key == "Enter" {
				down["type"], down["text"] = "keyDown", "\r"
			}
			if err := cdp.call(ctx, s, "Input.dispatchKeyEvent", down, nil); err != nil {
				return err
			}
			return cdp.call(ctx, s, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": keyCodes[key], "modifiers": mods}, nil)
		default:
			return cdp.call(ctx, s, "Input.insertText", map[string]any{"text": in.Text}, nil)
		}
	})
}

// sameOrigin refuses a request another site's page sends (its Origin is not the takeover page's):
// the token in the path is the secret, and a browser sends Origin on every POST.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == "http://"+r.Host
}

func writeJSONTo(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

var takeoverTmpl = template.Must(template.New("takeover").Parse(`<!doctype html>
<html><head><meta name="viewport" content="width=device-width"><title>browser-agent guard: take the wheel</title>
<style>body{font:16px system-ui;margin:1rem;max-width:60rem}img{max-width:100%;border:1px solid #999;cursor:crosshair}#bar>*{margin:.25rem}</style></head>
<body><h1>The guard's browser</h1>
<p id="st">Nobody has the wheel: the agent's client drives the browser.</p>
<div id="bar"><button id="take">Take the wheel</button> <button id="back" disabled>Hand back</button></div>
<div id="in" hidden><form id="tf"><input id="text" autocomplete="off" aria-label="Text to type into the focused field"> <button>Type</button></form>
<button data-key="Tab">Tab</button><button data-key="Shift+Tab">Shift+Tab</button><button data-key="Backspace">Backspace</button><button data-key="Enter">Enter</button>
<p>Click the picture to click the page. What you type goes to the browser only: the agent's client sees none of it.</p>
<p id="frame" role="status"></p><img id="view" alt="the guard's browser"></div>
<script>
const $ = (id) => document.getElementById(id);
const post = (p, body) => fetch(p, body === undefined ? {method: 'POST'} : {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
// The person's input is sent one event at a time, in order: a click that focuses a field lands
// before the text typed after it.
let q = Promise.resolve();
const send = (body) => { q = q.then(() => post('input', body)).catch(() => {}); return q; };
// gen numbers each question about the lease (take, hand back, state): an answer is shown only if
// no question was asked after it, so a slow answer to an older one never undoes a newer one.
let gen = 0, live = false, timer = null, asking = false;
const held = (h) => {
  live = h;
  $('st').textContent = (h ? 'You have the wheel: the agent is paused.' : 'Nobody has the wheel: the agent\'s client drives the browser.');
  $('in').hidden = !h; $('take').disabled = h; $('back').disabled = !h;
  clearTimeout(timer); if (h) frame(gen);
};
const state = async () => {
  const g = ++gen;
  try { const s = await (await fetch('state')).json(); if (g === gen) held(s.held); } catch (e) {}
};
// frame fetches one picture of the tab and asks for the next only when it has come: on a busy
// machine a picture slower than the pause is shown, never dropped for the next one.
const frame = async (g) => {
  let r = null;
  try { r = await fetch('frame?' + Date.now()); } catch (e) {}
  if (g !== gen || !live) return;
  if (r && r.status === 409) { state(); return; }
  if (r && r.ok) {
    const url = URL.createObjectURL(await r.blob()), old = $('view').src;
    if (g !== gen || !live) { URL.revokeObjectURL(url); return; }
    $('view').src = url; $('frame').textContent = '';
    if (old.startsWith('blob:')) URL.revokeObjectURL(old);
  } else {
    $('frame').textContent = 'No picture of the browser: ' + (r ? (await r.text()).trim() : 'the guard did not answer') + '. Trying again.';
  }
  timer = setTimeout(() => frame(g), 500);
};
// Take and Hand back wait for the client's call in flight; the page does not ask the state meanwhile.
$('take').onclick = async () => {
  const g = ++gen; asking = true;
  try { const r = await post('take'); if (g === gen) { if (r.ok) held(true); else state(); } } finally { asking = false; }
};
$('back').onclick = async () => {
  const g = ++gen; asking = true; live = false;
  try { await q; await post('release'); if (g === gen) held(false); } finally { asking = false; }
};
$('view').onclick = (e) => { const b = e.target.getBoundingClientRect(); send({kind: 'click', x: (e.clientX - b.left) / b.width, y: (e.clientY - b.top) / b.height}); };
$('tf').onsubmit = (e) => { e.preventDefault(); const t = $('text'); if (t.value) send({kind: 'text', text: t.value}); t.value = ''; };
for (const b of document.querySelectorAll('[data-key]')) b.onclick = () => send({kind: 'key', key: b.dataset.key});
// The lease may end without this page: idle or held too long, or handed back from another tab.
state(); setInterval(() => { if (!live && !asking) state(); }, 5000);
</script></body></html>`))

func (t *takeover) pageHTML(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; img-src 'self' blob:; style-src 'unsafe-inline'")
	takeoverTmpl.Execute(w, nil)
}
