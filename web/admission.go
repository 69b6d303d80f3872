package web

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/runner"
)

// admissions is the admission state, under its own lock: whether the server still admits runs,
// the live runs admitted and not finished (running and queued, and the queue itself), and each
// visitor's live and recorded runs in the window. admit decides a new run under this one lock, so
// that of many concurrent requests exactly as many as there are slots go live.
type admissions struct {
	mu       sync.Mutex
	closed   bool
	live     int // live runs admitted and not finished: running and queued
	queue    []*run
	liveRuns []*run                 // live runs admitted and not finished, oldest first
	visits   map[string][]time.Time // live runs per visitor in the window
	played   map[string][]time.Time // recorded runs per visitor in the window
}

// streamGate counts the open event streams, in all and per visitor, under its own lock.
type streamGate struct {
	mu    sync.Mutex
	open  int
	byVis map[string]int
}

// take opens a stream for visitor when under both limits; done gives it back.
func (g *streamGate) take(visitor string, max, perVisitor int) (done func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open >= max || g.byVis[visitor] >= perVisitor {
		return nil, false
	}
	g.open++
	g.byVis[visitor]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.open--
		if g.byVis[visitor]--; g.byVis[visitor] <= 0 {
			delete(g.byVis, visitor)
		}
	}, true
}

// running is the number of live runs running and waiting.
func (g *admissions) running(concurrent int) (running, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	running = min(g.live, concurrent)
	return running, g.live - running
}

// limitError is a 429.
type limitError struct {
	stopping bool // 503, not 429
	msg      string
	retry    time.Duration
	running  int
	queued   int
}

// Kinds of RecordedInfo: why a recorded run plays instead of a live one.
const (
	KindPaused  = "paused"  // live runs are off: spend cap, ledger, recorded-only mode
	KindBusy    = "busy"    // the live slot (and the queue) is taken: the visitor may watch that run
	KindVisitor = "visitor" // the visitor used up their live runs for the window
)

// admission is what createRun asks admit for.
type admission struct {
	visitor string
	info    RunInfo
	live    bool   // the ledger allows a live run
	why     string // why not, when !live
	rec     runner.Recording
	other   bool // rec is of another task
	found   bool // there is a recording to play
}

// admitted is admit's answer.
type admitted struct {
	run  *run
	live bool
	left int // live runs the visitor has left in the window
}

// admit decides how a new run is answered, under one lock: live (a slot or a place in the queue),
// or a recorded run when live runs are paused, the visitor used up their live runs, or the slot and
// the queue are taken (then the visitor is offered the run in progress to watch). Of many
// concurrent requests exactly as many as there are slots go live. Only past the visitor's recorded
// runs is the answer a 429. The caller must start the run with startLive or startPlayback.
func (s *Server) admit(a admission) (admitted, *limitError) {
	s.adm.mu.Lock()
	if s.adm.closed {
		s.adm.mu.Unlock()
		return admitted{}, &limitError{msg: "the server is stopping", retry: 30 * time.Second, stopping: true}
	}
	now := s.clock()
	live := s.windowLocked(s.adm.visits, a.visitor, now)
	played := s.windowLocked(s.adm.played, a.visitor, now)
	goLive := a.live
	kind, why, watch := KindPaused, a.why, ""
	per := "hour"
	if s.limits.Window != time.Hour {
		per = human(s.limits.Window)
	}
	running := min(s.adm.live, s.limits.Concurrent)
	queued := s.adm.live - running
	if goLive && len(live) >= s.limits.PerVisitor {
		goLive, kind = false, KindVisitor
		why = fmt.Sprintf("visitor limit: %s per %s; next live run in %s",
			plural(s.limits.PerVisitor, "live run"), per, human(live[0].Add(s.limits.Window).Sub(now)))
	} else if goLive && s.adm.live >= s.limits.Concurrent+s.limits.Queue {
		goLive, kind = false, KindBusy
		why = fmt.Sprintf("busy: one live run at a time; %d running, %d waiting", running, queued)
		if s.limits.Concurrent > 1 {
			why = fmt.Sprintf("busy: %d live runs at a time; %d running, %d waiting", s.limits.Concurrent, running, queued)
		}
		watch = s.adm.watchableLocked()
	}
	if !goLive && len(played) >= s.limits.Recorded {
		s.adm.mu.Unlock()
		retry := played[0].Add(s.limits.Window).Sub(now)
		return admitted{}, &limitError{
			msg:   fmt.Sprintf("visitor limit: %s per %s; try again in %s", plural(s.limits.Recorded, "recorded run"), per, human(retry)),
			retry: retry, running: running, queued: queued,
		}
	}
	place := 0
	if goLive && s.adm.live >= s.limits.Concurrent {
		place = queued + 1
	}
	info := a.info
	if !goLive {
		recorded(&info, a.rec, a.other, a.found, why)
		info.Recorded.Kind, info.Recorded.Watch = kind, watch
	}
	state := StateRunning
	if place > 0 {
		state = StateQueued
	}
	info.State, info.Place = state, place
	r := newRun(newRunID(), a.visitor, now, info)
	if goLive {
		s.adm.visits[a.visitor] = append(live, now)
		s.adm.live++
		s.adm.liveRuns = append(s.adm.liveRuns, r)
		if place > 0 {
			s.adm.queue = append(s.adm.queue, r)
		}
	} else {
		s.adm.played[a.visitor] = append(played, now)
	}
	left := max(0, s.limits.PerVisitor-len(s.adm.visits[a.visitor]))
	s.pruneVisitsLocked(now)
	s.reg.add(r, s.limits.KeepRuns)
	// The caller starts the run's goroutine; counting it here, under the lock that Close takes
	// first, keeps Add from racing Close's Wait.
	s.wg.Add(1)
	r.setState(state, place, nil)
	s.adm.mu.Unlock()
	s.persistAdmission(r, now, goLive, place > 0)
	return admitted{run: r, live: goLive, left: left}, nil
}

// windowLocked returns visitor's times in m that are within the window. s.adm.mu is held.
func (s *Server) windowLocked(m map[string][]time.Time, visitor string, now time.Time) []time.Time {
	ts := m[visitor]
	keep := ts[:0]
	for _, t := range ts {
		if now.Sub(t) < s.limits.Window {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		delete(m, visitor)
		return nil
	}
	m[visitor] = keep
	return keep
}

// runsLeft is how many live runs visitor has left in the window, and when the next comes back.
func (s *Server) runsLeft(visitor string) (int, time.Duration) {
	s.adm.mu.Lock()
	defer s.adm.mu.Unlock()
	now := s.clock()
	live := s.windowLocked(s.adm.visits, visitor, now)
	left := max(0, s.limits.PerVisitor-len(live))
	if len(live) == 0 {
		return left, 0
	}
	return left, live[0].Add(s.limits.Window).Sub(now)
}

// liveRunID is the ID of the live run in progress that anyone may watch, "" when none.
func (s *Server) liveRunID() string {
	s.adm.mu.Lock()
	defer s.adm.mu.Unlock()
	return s.adm.watchableLocked()
}

// watchableLocked is the live run in progress offered to other visitors to watch: a preset's only,
// whose task is ours; a typed task is its visitor's words and is not offered. g.mu is held.
func (g *admissions) watchableLocked() string {
	for _, r := range g.liveRuns {
		if info := r.snapshot().RunInfo; info.State == StateRunning && info.Preset != "" {
			return r.id
		}
	}
	return ""
}

// pruneVisitsLocked forgets visitors with no run in the window, so the map stays bounded by the
// visitors of the last window.
func (s *Server) pruneVisitsLocked(now time.Time) {
	if len(s.adm.visits)+len(s.adm.played) < 1024 {
		return
	}
	for _, m := range []map[string][]time.Time{s.adm.visits, s.adm.played} {
		for v, ts := range m {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= s.limits.Window {
				delete(m, v)
			}
		}
	}
}

// doneLive gives back a live run's count.
func (s *Server) doneLive(r *run) {
	s.adm.mu.Lock()
	s.adm.live--
	if i := slices.Index(s.adm.liveRuns, r); i >= 0 {
		s.adm.liveRuns = slices.Delete(s.adm.liveRuns, i, i+1)
	}
	s.adm.mu.Unlock()
}

// dequeue takes r out of the queue and tells the runs behind it their new place.
func (s *Server) dequeue(r *run) {
	s.adm.mu.Lock()
	i := slices.Index(s.adm.queue, r)
	if i < 0 {
		s.adm.mu.Unlock()
		return
	}
	s.adm.queue = slices.Delete(s.adm.queue, i, i+1)
	behind := slices.Clone(s.adm.queue[i:])
	s.adm.mu.Unlock()
	if s.visitLog != nil {
		if err := s.visitLog.Dequeue(context.Background(), r.id); err != nil {
			s.logf("web: visit log: %v", err)
		}
	}
	for j, q := range behind {
		q.setState(StateQueued, i+j+1, nil)
	}
}
