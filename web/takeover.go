package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

// StateWaiting is a live run paused at a sign-in page, waiting for the visitor who started it to
// take over (POST /api/runs/{id}/takeover) and sign in.
const StateWaiting = "waiting_for_human"

// Lease times by default: a lease ends when its holder sends nothing for DefaultLeaseIdle (input
// renews it), and DefaultLeaseMax after it was taken in any case. WithLease sets others.
const (
	DefaultLeaseIdle = 60 * time.Second
	DefaultLeaseMax  = 5 * time.Minute
)

// WithLease sets how long a takeover lease lasts without input (idle) and at most (max, however
// active its holder). Values below a second, and an idle longer than max, are refused by New.
func WithLease(idle, max time.Duration) Option {
	return func(s *Server) { s.leaseIdle, s.leaseMax = idle, max }
}

// TakeoverBrowser is what a sign-in takeover needs of a run's browser: *guarded.Browser has it.
// None of it is a coordinator.Browser method: the model's tools cannot reach it.
type TakeoverBrowser interface {
	SetSignInLease(held bool)
	TakeoverInput(ctx context.Context, in bridge.Input) error
	TakeoverScreenshot(ctx context.Context) ([]byte, error)
	SignInWrites() int64
}

// TakeoverInfo is the run's takeover state, in RunInfo while the run waits for a person.
type TakeoverInfo struct {
	// WaitUntil is when the run stops waiting for a takeover and ends human_action_required.
	WaitUntil time.Time `json:"wait_until"`
	// Held is set while the visitor who started the run holds the lease.
	Held bool `json:"held"`
	// Banner says who is in control of the browser.
	Banner string `json:"banner"`
}

// Banners of the live view.
const (
	BannerAgent  = "the agent is paused at a sign-in page; only the visitor who started this run can take over"
	BannerPerson = "a person is in control of the browser; the agent is paused and sees nothing of what they type"
)

// takeover is one run's sign-in handoff: at most one lease, held by the run's own visitor.
type takeover struct {
	mu       sync.Mutex
	b        TakeoverBrowser // set while the run waits
	holder   string          // visitor key of the lease holder, "" when none
	started  time.Time
	expires  time.Time
	hardEnd  time.Time
	clicks   int
	keys     int
	released bool
}

func (t *takeover) heldBy(visitor string, now time.Time) (TakeoverBrowser, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.b == nil || t.holder == "" || t.holder != visitor || now.After(t.expires) || now.After(t.hardEnd) {
		return nil, false
	}
	return t.b, true
}

// signInFunc makes the coordinator's sign-in hook for run r: the run waits in StateWaiting until
// its visitor takes over and releases the lease, the lease expires, or nobody takes over before
// the policy's wait ends.
func (s *Server) signInFunc(r *run) func(ctx context.Context, b coordinator.Browser, url string) (coordinator.Takeover, bool) {
	return func(ctx context.Context, b coordinator.Browser, url string) (coordinator.Takeover, bool) {
		tb, ok := b.(TakeoverBrowser)
		if !ok {
			return coordinator.Takeover{}, false
		}
		u, err := policy.ParseURL(url, "")
		if err != nil {
			return coordinator.Takeover{}, false
		}
		secs, ok := s.pol.SignInWait(u)
		if !ok {
			return coordinator.Takeover{}, false
		}
		t := r.to
		waitUntil := s.clock().Add(time.Duration(secs) * time.Second)
		t.mu.Lock()
		t.b, t.holder, t.released = tb, "", false
		t.mu.Unlock()
		r.atSignIn(url)
		r.setState(StateWaiting, 0, func(i *RunInfo) {
			i.Takeover = &TakeoverInfo{WaitUntil: waitUntil.UTC(), Banner: BannerAgent}
		})
		s.logf("web: run %s waits for a person at a sign-in page", r.id)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var out coordinator.Takeover
		resumed := false
	wait:
		for {
			select {
			case <-ctx.Done():
				break wait
			case <-tick.C:
			}
			now := s.clock()
			t.mu.Lock()
			switch {
			case t.holder == "" && now.After(waitUntil):
				t.mu.Unlock()
				break wait
			case t.holder != "" && (t.released || now.After(t.expires) || now.After(t.hardEnd)):
				out = coordinator.Takeover{Duration: now.Sub(t.started), Clicks: t.clicks, Keys: t.keys}
				t.mu.Unlock()
				out.Submits = int(tb.SignInWrites())
				// A released lease resumes the agent; an expired one only if the person signed in.
				resumed = t.released || out.Submits > 0
				break wait
			}
			t.mu.Unlock()
		}
		t.mu.Lock()
		t.b, t.holder = nil, ""
		t.mu.Unlock()
		tb.SetSignInLease(false)
		r.setState(StateRunning, 0, func(i *RunInfo) { i.Takeover = nil })
		s.logf("web: run %s: takeover ended (resumed %v)", r.id, resumed)
		return out, resumed
	}
}

// runBrowser is the browser of the run while it waits for a person (tests).
func (s *Server) runBrowser(id string) TakeoverBrowser {
	r := s.lookup(id)
	if r == nil {
		return nil
	}
	r.to.mu.Lock()
	defer r.to.mu.Unlock()
	return r.to.b
}

// takeoverRun applies the API's origin check and, for a body, its type.
func (s *Server) takeoverRun(w http.ResponseWriter, r *http.Request) (*run, string, bool) {
	if !s.originAllowed(r) {
		writeError(w, http.StatusForbidden, originRefused(r.Header.Get("Origin")), nil)
		return nil, "", false
	}
	run := s.lookup(r.PathValue("id"))
	if run == nil {
		writeError(w, http.StatusNotFound, "no such run", nil)
		return nil, "", false
	}
	v := s.visitor(r)
	if v != run.visitor {
		writeError(w, http.StatusForbidden, "only the visitor who started this run can take over its browser", nil)
		return nil, "", false
	}
	return run, v, true
}

// heldRun is takeoverRun for the holder's own calls: it also answers 409 unless the visitor holds
// the run's lease now, and returns the browser the lease is on.
func (s *Server) heldRun(w http.ResponseWriter, r *http.Request) (*run, string, TakeoverBrowser, bool) {
	run, v, ok := s.takeoverRun(w, r)
	if !ok {
		return nil, "", nil, false
	}
	b, held := run.to.heldBy(v, s.clock())
	if !held {
		writeError(w, http.StatusConflict, "you hold no lease on this run", nil)
		return nil, "", nil, false
	}
	return run, v, b, true
}

// TakeoverStatusJSON is GET /api/runs/{id}/takeover: whether the asking visitor is the one who
// may take over the run (a page following a link to someone else's run is a spectator), and the
// run's takeover state.
type TakeoverStatusJSON struct {
	Yours   bool `json:"yours"`
	Waiting bool `json:"waiting"`
	Held    bool `json:"held"`
}

// takeoverStatus is GET /api/runs/{id}/takeover.
func (s *Server) takeoverStatus(w http.ResponseWriter, r *http.Request) {
	run := s.lookup(r.PathValue("id"))
	if run == nil {
		writeError(w, http.StatusNotFound, "no such run", nil)
		return
	}
	t := run.to
	t.mu.Lock()
	st := TakeoverStatusJSON{Yours: s.visitor(r) == run.visitor, Waiting: t.b != nil, Held: t.b != nil && t.holder != ""}
	t.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st)
}

// takeoverStart is POST /api/runs/{id}/takeover: the run's visitor takes the lease.
func (s *Server) takeoverStart(w http.ResponseWriter, r *http.Request) {
	run, v, ok := s.takeoverRun(w, r)
	if !ok {
		return
	}
	t, now := run.to, s.clock()
	t.mu.Lock()
	if t.b == nil {
		t.mu.Unlock()
		writeError(w, http.StatusConflict, "the run is not waiting for a person", nil)
		return
	}
	if t.holder != "" {
		t.mu.Unlock()
		writeError(w, http.StatusConflict, "the lease is already held", nil)
		return
	}
	t.holder, t.started, t.expires, t.hardEnd, t.clicks, t.keys = v, now, now.Add(s.leaseIdle), now.Add(s.leaseMax), 0, 0
	t.b.SetSignInLease(true)
	t.mu.Unlock()
	run.setState(StateWaiting, 0, func(i *RunInfo) {
		if i.Takeover != nil {
			i.Takeover.Held, i.Takeover.Banner = true, BannerPerson
		}
	})
	s.logf("web: run %s: a person took over", run.id)
	writeJSON(w, http.StatusOK, map[string]any{"held": true, "idle_seconds": int(s.leaseIdle / time.Second), "max_seconds": int(s.leaseMax / time.Second)})
}

// takeoverRelease is POST /api/runs/{id}/release: the holder hands the browser back.
func (s *Server) takeoverRelease(w http.ResponseWriter, r *http.Request) {
	run, _, _, ok := s.heldRun(w, r)
	if !ok {
		return
	}
	run.to.mu.Lock()
	run.to.released = true
	run.to.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"released": true})
}

// InputRequest is the body of POST /api/runs/{id}/input: one click (x, y as fractions of the
// frame), one key by name, or text. It is given to the page and never stored.
type InputRequest struct {
	Kind string  `json:"kind"`
	X    float64 `json:"x,omitempty"`
	Y    float64 `json:"y,omitempty"`
	Key  string  `json:"key,omitempty"`
	Text string  `json:"text,omitempty"`
}

// takeoverInput is POST /api/runs/{id}/input: the holder's input to the one page; it renews the
// lease. Only counts are kept.
func (s *Server) takeoverInput(w http.ResponseWriter, r *http.Request) {
	run, v, b, ok := s.heldRun(w, r)
	if !ok {
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "send the input as application/json", nil)
		return
	}
	var req InputRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be one JSON object: {"kind": "click", "x": 0.5, "y": 0.5}, {"kind": "key", "key": "Enter"} or {"kind": "text", "text": "..."}`, nil)
		return
	}
	in := bridge.Input{Kind: req.Kind, X: req.X, Y: req.Y, Key: req.Key, Text: req.Text}
	if err := in.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := b.TakeoverInput(ctx, in); err != nil {
		if errors.Is(err, bridge.ErrNoLease) {
			writeError(w, http.StatusConflict, "you hold no lease on this run", nil)
			return
		}
		writeError(w, http.StatusBadGateway, "the browser did not take the input", nil)
		return
	}
	t := run.to
	t.mu.Lock()
	switch in.Kind {
	case "click":
		t.clicks++
	case "key":
		t.keys++
	default:
		t.keys += len([]rune(in.Text))
	}
	if now := s.clock(); t.holder == v {
		// Activity renews the idle expiry, never past the hard maximum.
		t.expires = now.Add(s.leaseIdle)
		if t.expires.After(t.hardEnd) {
			t.expires = t.hardEnd
		}
	}
	t.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// takeoverFrame is GET /api/runs/{id}/takeover/frame: the page as the holder sees it, sign-in
// form included. Only the holder gets it; it is never an event, a recording or an audit entry.
func (s *Server) takeoverFrame(w http.ResponseWriter, r *http.Request) {
	_, _, b, ok := s.heldRun(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), runner.FrameTimeout)
	defer cancel()
	png, err := b.TakeoverScreenshot(ctx)
	if err != nil || len(png) > runner.MaxFrameSize {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("no frame: %s", runner.ViewFailed), nil)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}
