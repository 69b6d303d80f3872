package web

import (
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

// Run states.
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
)

// Names of the events of a run's stream.
const (
	EventRun    = "run"    // RunInfo, sent first and on every change of state
	EventStep   = "step"   // coordinator.Step
	EventFrame  = "frame"  // FrameJSON: the live view changed
	EventPhase  = "phase"  // PhaseJSON: a start phase of the run's browser
	EventResult = "result" // runner.ResultJSON
	EventEnd    = "end"    // {}: the stream ends
)

// RunInfo describes a run: what was asked and how it is being answered.
type RunInfo struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Place  int    `json:"place,omitempty"` // place in the queue while queued, 1 = next
	Task   string `json:"task"`
	Preset string `json:"preset,omitempty"`
	// Title is the preset's title, as its card on the page names it ("" for a typed task).
	Title string `json:"title,omitempty"`
	// Simulated is set for the two simulated presets: one scripted tool call is substituted for
	// the model's turn, because a real model refuses it; the policy's decision on it is real.
	Simulated bool          `json:"simulated"`
	Model     string        `json:"model"`
	Recorded  *RecordedInfo `json:"recorded,omitempty"` // set when a recorded run plays instead of a live one
	// Takeover is set while the run waits at a sign-in page for its visitor (StateWaiting).
	Takeover *TakeoverInfo `json:"takeover,omitempty"`
}

// RecordedInfo labels a recorded run played in place of a live one.
type RecordedInfo struct {
	// Kind is why in one word: KindPaused, KindBusy or KindVisitor.
	Kind string `json:"kind"`
	// Why says it for a person: "daily model-spend cap reached", "busy: one live run at a time; …".
	Why string `json:"why"`
	// Watch is the ID of the live run in progress when the demo was busy: its event stream can be
	// followed read-only.
	Watch      string    `json:"watch,omitempty"`
	Preset     string    `json:"preset"`
	Task       string    `json:"task"` // the recorded run's task
	Model      string    `json:"model"`
	Browser    string    `json:"browser"`
	RecordedAt time.Time `json:"recorded_at"`
	// OtherTask is set when the recording is of another task than the one asked.
	OtherTask bool `json:"other_task"`
}

// FrameJSON says the live view changed: Seq numbers the new frame (GET /api/runs/{id}/frame), or
// View says why there is none.
type FrameJSON struct {
	Seq  int    `json:"seq,omitempty"`
	Step int    `json:"step"` // the last step before it
	View string `json:"view,omitempty"`
	// URL is the page the agent's browser was on after that step (the last step with a URL), and
	// Verdict and Reason the decision of that step's request.
	URL     string `json:"url,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// keepFrames bounds the frames of a run kept for GET /frame?seq=N (the latest is always kept).
const keepFrames = 40

// PhaseJSON is a start phase of a live run's browser, AtMS after the run began.
type PhaseJSON struct {
	Phase string `json:"phase"`
	AtMS  int64  `json:"at_ms"`
}

// RunJSON is GET /api/runs/{id}: the run, its steps so far, its live view and its result.
type RunJSON struct {
	RunInfo
	Phases []PhaseJSON        `json:"phases"`
	Steps  []coordinator.Step `json:"steps"`
	Frame  FrameJSON          `json:"frame"`
	Result *runner.ResultJSON `json:"result"`
}

type event struct {
	name string
	data []byte
}

// run is the state of one run the server started. Its events only grow; streams follow them.
type run struct {
	id      string
	visitor string
	created time.Time

	mu      sync.Mutex
	info    RunInfo
	events  []event
	changed chan struct{} // closed and replaced on every new event
	phases  []PhaseJSON
	steps   []coordinator.Step
	frame   []byte
	frames  map[int][]byte // by seq, the last keepFrames
	fj      FrameJSON
	result  *runner.ResultJSON
	done    bool

	to *takeover // the sign-in handoff (takeover.go)
}

func newRun(id, visitor string, created time.Time, info RunInfo) *run {
	info.ID = id
	return &run{to: &takeover{}, id: id, visitor: visitor, created: created, info: info, changed: make(chan struct{})}
}

// emitLocked appends an event and wakes the streams. r.mu is held.
func (r *run) emitLocked(name string, v any) {
	r.events = append(r.events, event{name: name, data: mustJSON(v)})
	close(r.changed)
	r.changed = make(chan struct{})
}

// setState changes the run's state and sends the run event.
func (r *run) setState(state string, place int, change func(*RunInfo)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.info.State, r.info.Place = state, place
	if change != nil {
		change(&r.info)
	}
	r.emitLocked(EventRun, r.info)
}

// moment records a step or a change of the live view.
func (r *run) moment(m runner.Moment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case m.Phase != "":
		p := PhaseJSON{Phase: m.Phase, AtMS: m.AtMS}
		r.phases = append(r.phases, p)
		r.emitLocked(EventPhase, p)
	case m.Step != nil:
		r.steps = append(r.steps, *m.Step)
		r.emitLocked(EventStep, *m.Step)
	case m.Frame != nil:
		r.frame = m.Frame
		r.fj = r.whereLocked(FrameJSON{Seq: r.fj.Seq + 1, Step: len(r.steps)})
		if r.frames == nil {
			r.frames = map[int][]byte{}
		}
		r.frames[r.fj.Seq] = m.Frame
		delete(r.frames, r.fj.Seq-keepFrames)
		r.emitLocked(EventFrame, r.fj)
	default:
		r.viewLocked(r.whereLocked(FrameJSON{Seq: r.fj.Seq, Step: len(r.steps), View: m.View}))
	}
}

// viewLocked makes f, a view without a frame (f.View says why), the live view's, and sends it: the
// event has no seq, as there is no frame to fetch.
func (r *run) viewLocked(f FrameJSON) {
	r.frame = nil
	r.fj = f
	ev := f
	ev.Seq = 0
	r.emitLocked(EventFrame, ev)
}

// atSignIn says the live view's page is the sign-in page at url, never shot: the run waits there
// for a person (the step that opened it is decided once the wait ends). Only url's origin and
// path are shown: the step, once decided, shows the URL as the coordinator redacts it.
func (r *run) atSignIn(url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.viewLocked(FrameJSON{Seq: r.fj.Seq, Step: len(r.steps), View: runner.ViewWithheld, URL: policy.CleanURL(url)})
}

// finish records the result and ends the stream.
func (r *run) finish(res runner.ResultJSON) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.result = &res
	r.info.State, r.info.Place = StateDone, 0
	r.emitLocked(EventRun, r.info)
	r.emitLocked(EventResult, res)
	r.emitLocked(EventEnd, struct{}{})
	r.done = true
}

// snapshot is GET /api/runs/{id}.
func (r *run) snapshot() RunJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := RunJSON{RunInfo: r.info, Phases: append([]PhaseJSON{}, r.phases...), Steps: append([]coordinator.Step{}, r.steps...), Frame: r.fj, Result: r.result}
	if r.frame == nil {
		out.Frame.Seq = 0
	}
	return out
}

// whereLocked adds to f the page the browser was on and the last step's decision. r.mu is held.
func (r *run) whereLocked(f FrameJSON) FrameJSON {
	for i := len(r.steps) - 1; i >= 0; i-- {
		if r.steps[i].URL != "" {
			f.URL = r.steps[i].URL
			break
		}
	}
	if n := len(r.steps); n > 0 {
		f.Verdict, f.Reason = r.steps[n-1].Verdict.String(), r.steps[n-1].Reason
	}
	return f
}

// latestFrame returns the current frame of the live view, or nil.
func (r *run) latestFrame() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frame
}

// frameAt returns frame seq, if it is still kept.
func (r *run) frameAt(seq int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames[seq]
}

// next returns the events after the first n, the channel closed on the next one, and whether the
// run is done.
func (r *run) next(n int) ([]event, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var evs []event
	if n < len(r.events) {
		evs = append(evs, r.events[n:]...)
	}
	return evs, r.changed, r.done
}

func (r *run) isDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

// stoppedResult is the result of a run the server's stop ended before it ran (queued) or while it
// played a recording.
func stoppedResult(info RunInfo, now time.Time) runner.ResultJSON {
	res := errorResult(info, now, stopping.Error())
	res.Status = coordinator.StatusInterrupted
	return res
}

// errorResult is the result of a run that could not run at all.
func errorResult(info RunInfo, now time.Time, reason string) runner.ResultJSON {
	return runner.ResultJSON{
		Status: coordinator.StatusError, Reason: reason, Task: info.Task, Preset: info.Preset, Model: info.Model,
		Fields: []runner.FieldJSON{}, Sources: []runner.SourceJSON{}, Conflicts: []coordinator.Conflict{},
		Evidence: []coordinator.Evidence{}, Steps: []coordinator.Step{}, StartedAt: now, EndedAt: now,
	}
}
