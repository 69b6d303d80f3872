package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/policy"
)

// Ledger is the daily model-spend ledger; *audit.Store is one.
type Ledger interface {
	SpendOn(ctx context.Context, day string) (float64, error)
	AddSpend(ctx context.Context, day string, usd float64) error
}

var _ Ledger = (*audit.Store)(nil)

// VisitLog keeps what the limits count across restarts: each visitor's runs (under a salted hash,
// never the address) and the runs waiting in the queue. *audit.Store is one.
type VisitLog interface {
	DemoSalt(ctx context.Context) ([]byte, error)
	AddVisit(ctx context.Context, v audit.Visit) error
	VisitsSince(ctx context.Context, since time.Time) ([]audit.Visit, error)
	Enqueue(ctx context.Context, q audit.QueuedRun) error
	Dequeue(ctx context.Context, id string) error
	Queued(ctx context.Context) ([]audit.QueuedRun, error)
}

var _ VisitLog = (*audit.Store)(nil)

// WithVisitLog keeps the per-visitor counts and the queue in v, so that they survive a restart.
func WithVisitLog(v VisitLog) Option { return func(s *Server) { s.visitLog = v } }

// Limits are the public-run limits. A zero field takes its default (DefaultLimits).
type Limits struct {
	Concurrent    int           // runs at a time (1)
	Queue         int           // runs that may wait for a slot; the others get 429 (0)
	PerVisitor    int           // live runs per visitor per Window; past it a recorded run plays (5)
	Recorded      int           // recorded runs per visitor per Window; past it 429 (30)
	Window        time.Duration // (1 h)
	DailySpendUSD float64       // model spend per UTC day; past it recorded runs play ($3)
	RunDeadline   time.Duration // bounds one live run (2 min)
	BusyRetry     time.Duration // Retry-After per run ahead when busy (15 s)
	Streams       int           // open event streams (256)
	VisitorStream int           // open event streams per visitor (8)
	KeepRuns      int           // finished runs kept for GET (64)
}

// DefaultLimits are the live demo's limits: one run at a time, 5 runs per visitor per hour, $3 of
// model spend a day.
func DefaultLimits() Limits {
	return Limits{
		Concurrent: 1, Queue: 0, PerVisitor: 5, Recorded: 30, Window: time.Hour, DailySpendUSD: 3,
		RunDeadline: 2 * time.Minute, BusyRetry: 15 * time.Second, Streams: 256, VisitorStream: 8, KeepRuns: 64,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	pickD := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	out := Limits{
		Concurrent: pick(l.Concurrent, d.Concurrent), Queue: max(l.Queue, 0), PerVisitor: pick(l.PerVisitor, d.PerVisitor),
		Recorded: pick(l.Recorded, d.Recorded),
		Window:   pickD(l.Window, d.Window), DailySpendUSD: l.DailySpendUSD, RunDeadline: pickD(l.RunDeadline, d.RunDeadline),
		BusyRetry: pickD(l.BusyRetry, d.BusyRetry), Streams: pick(l.Streams, d.Streams),
		VisitorStream: pick(l.VisitorStream, d.VisitorStream), KeepRuns: pick(l.KeepRuns, d.KeepRuns),
	}
	if !(out.DailySpendUSD > 0) || math.IsInf(out.DailySpendUSD, 0) {
		out.DailySpendUSD = d.DailySpendUSD
	}
	return out
}

// Option configures a Server.
type Option func(*Server)

// WithLauncher sets the browser each live run drives. Without it live runs end in an error.
func WithLauncher(l Launcher) Option { return func(s *Server) { s.launch = l } }

// WithModel sets the model of live runs: name is recorded when f fails, f builds one per run.
func WithModel(name string, f ModelFunc) Option {
	return func(s *Server) { s.modelName, s.model = name, f }
}

// WithRecorder records every live run and its steps (the audit store).
func WithRecorder(r coordinator.Recorder) Option { return func(s *Server) { s.rec = r } }

// WithLedger sets the spend ledger. Without one, no live run is allowed: recorded runs play.
func WithLedger(l Ledger) Option { return func(s *Server) { s.ledger = l } }

// WithRecordedOnly plays a recorded run for every request: no live run, no model spend. It is the
// demo's recorded-only mode, chosen on purpose ("serve --recorded-only" or "--daily-spend 0").
func WithRecordedOnly(on bool) Option { return func(s *Server) { s.recordedOnly = on } }

// WithClock sets the clock of the limits, the ledger's day and the coordinator (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.clock = now } }

// WithLimits sets the public-run limits.
func WithLimits(l Limits) Option { return func(s *Server) { s.limits = l.withDefaults() } }

// WithTrustedProxies sets the proxies whose X-Forwarded-For is believed.
func WithTrustedProxies(p ...netip.Prefix) Option {
	return func(s *Server) { s.trusted = append(s.trusted, p...) }
}

// WithAllowedOrigins lets pages of these origins (e.g. "chrome-extension://ID", the side panel)
// call the API: they get CORS headers and may start runs.
func WithAllowedOrigins(origins ...string) Option {
	return func(s *Server) {
		for _, o := range origins {
			s.origins[o] = true
		}
	}
}

// WithRecordings sets the recorded runs played instead of live ones (default: the embedded ones).
func WithRecordings(recs []Recording) Option {
	return func(s *Server) {
		s.recordings = map[string]Recording{}
		for _, r := range recs {
			s.recordings[r.Preset] = r
		}
	}
}

// WithPlayback sets how a recorded run is paced: speed multiplies its recorded gaps (0 plays it at
// once) and no gap is longer than maxGap. Default 1 and 1.5 s.
func WithPlayback(speed float64, maxGap time.Duration) Option {
	return func(s *Server) { s.speed, s.maxGap = max(speed, 0), maxGap }
}

// WithPrewarm keeps the next run's browser started before it is needed (see pool): a run takes a
// browser launched in advance, its own, and the next one starts at once. Default off.
func WithPrewarm(on bool) Option { return func(s *Server) { s.prewarm = on } }

// WithFrames turns the live view on or off (default on).
func WithFrames(on bool) Option { return func(s *Server) { s.frames = on } }

// WithLogf sets where the server's diagnostic lines go (never page text).
func WithLogf(f func(format string, args ...any)) Option {
	return func(s *Server) {
		if f != nil {
			s.logf = f
		}
	}
}

// Server is the live demo's HTTP handler. Close stops its runs.
type Server struct {
	pol        *policy.Policy
	launch     Launcher
	model      ModelFunc
	modelName  string
	rec        coordinator.Recorder
	ledger     Ledger
	visitLog   VisitLog
	salt       []byte // keys visitor hashes when there is a visit log
	clock      func() time.Time
	limits     Limits
	trusted    []netip.Prefix
	origins    map[string]bool
	recordings map[string]Recording
	speed      float64
	maxGap     time.Duration
	frames     bool
	// recordedOnly: every run plays a recording (WithRecordedOnly).
	recordedOnly bool
	prewarm      bool
	pool         *pool
	poolStop     context.CancelFunc // stops the pool's refills when the server begins to stop
	logf         func(string, ...any)
	handler      http.Handler
	// leaseIdle and leaseMax bound a sign-in takeover lease (WithLease).
	leaseIdle, leaseMax time.Duration

	ctx      context.Context
	cancel   context.CancelCauseFunc
	draining chan struct{} // closed when Shutdown begins: queued runs end, live ones go on
	drainOne sync.Once
	wg       sync.WaitGroup
	slots    chan struct{}

	mu       sync.Mutex
	closed   bool
	live     int // live runs admitted and not finished: running and queued
	queue    []*run
	liveRuns []*run                 // live runs admitted and not finished, oldest first
	visits   map[string][]time.Time // live runs per visitor in the window
	played   map[string][]time.Time // recorded runs per visitor in the window
	streams  int
	vstreams map[string]int
	runs     map[string]*run
	order    []string // run IDs, oldest first

	ledgerMu sync.Mutex
	unpaid   map[string]float64 // spend not yet written to the ledger, by day

	recentMu sync.Mutex
	recent   map[string]Recording // the latest live run of each preset that ended as expected
}

// New returns a Server for pol. The recorded runs default to the embedded ones.
func New(pol *policy.Policy, opts ...Option) (*Server, error) {
	if pol == nil || len(pol.Sites()) == 0 {
		return nil, errors.New("web: a policy with at least one site is needed")
	}
	s := &Server{
		pol: pol, clock: time.Now, limits: DefaultLimits(), origins: map[string]bool{},
		speed: 1, maxGap: 1500 * time.Millisecond, frames: true, logf: func(string, ...any) {},
		visits: map[string][]time.Time{}, played: map[string][]time.Time{}, vstreams: map[string]int{}, runs: map[string]*run{},
		recent: map[string]Recording{}, leaseIdle: DefaultLeaseIdle, leaseMax: DefaultLeaseMax,
	}
	for _, o := range opts {
		o(s)
	}
	if s.leaseIdle < time.Second || s.leaseMax < s.leaseIdle {
		return nil, fmt.Errorf("web: a takeover lease needs an idle time of at least 1s and a maximum no shorter (got %v and %v)", s.leaseIdle, s.leaseMax)
	}
	if s.recordings == nil {
		recs, err := EmbeddedRecordings()
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		WithRecordings(recs)(s)
	}
	s.slots = make(chan struct{}, s.limits.Concurrent)
	if err := s.restore(); err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.draining = make(chan struct{})
	if launch := s.launch; launch != nil {
		// The pool holds one browser, started when the previous run closed its own: it serves one
		// live run at a time. With more (--concurrent), every run starts its own browser, so that
		// no run waits for another's to end.
		if s.prewarm && !s.recordedOnly && s.limits.Concurrent == 1 {
			pctx, stop := context.WithCancel(s.ctx)
			s.pool, s.poolStop = newPool(pctx, launch, s.pol, time.Now), stop
			s.launch = func(ctx context.Context, _ *policy.Policy) (coordinator.Browser, io.Closer, error) {
				return s.pool.take(ctx, phaseOf(ctx))
			}
		} else {
			s.launch = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
				phaseOf(ctx)(PhaseCold)
				return launch(ctx, pol)
			}
		}
	}
	s.handler = s.routes()
	return s, nil
}

// ReasonStopping is why the server ended a run: the reason of its result is
// "interrupted: the server is stopping" (coordinator.Interrupt).
const ReasonStopping = "the server is stopping"

// stopping is the cause the server's runs are canceled with.
var stopping = &coordinator.Interrupt{Why: ReasonStopping}

// Close interrupts the runs in progress at once and waits for them: each ends interrupted, its
// browser closed and its end recorded, and its streams get the result and the end event.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.Shutdown(ctx)
}

// Shutdown stops the server gracefully: no new run is admitted (503), queued runs end at once,
// and the live runs may finish until ctx is done; then the rest are interrupted as by Close.
// Every run's streams get its result (status interrupted, reason "interrupted: the server is
// stopping", for the runs ended here) and the end event. It returns when every run has ended.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.drainOne.Do(func() {
		close(s.draining)
		// No new browser is started for a run that will not come: a draining server's live runs
		// have theirs, and a launch would only slow them down.
		if s.poolStop != nil {
			s.poolStop()
		}
	})
	all := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-ctx.Done():
	}
	s.cancel(stopping)
	<-all
	if s.pool != nil {
		s.pool.wait()
	}
	return nil
}

var _ http.Handler = (*Server)(nil)

// ServeHTTP serves the page, its static files and the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Why a recorded run plays instead of a live one.
const (
	WhySpendCap = "daily model-spend cap reached"
	WhyLedger   = "spend ledger unavailable"
	// WhyRecordedOnly: the server was started in recorded-only mode.
	WhyRecordedOnly = "recorded-only mode"
)

// liveAllowed checks the spend ledger before a live run. Anything but a readable ledger under the
// cap, with every charge written, means no live run: it fails closed.
func (s *Server) liveAllowed(ctx context.Context) (bool, string) {
	if s.recordedOnly {
		return false, WhyRecordedOnly
	}
	if s.ledger == nil {
		return false, WhyLedger
	}
	s.ledgerMu.Lock()
	defer s.ledgerMu.Unlock()
	if err := s.flushLocked(ctx); err != nil {
		s.logf("web: spend ledger: %v", err)
		return false, WhyLedger
	}
	spent, err := s.ledger.SpendOn(ctx, audit.Day(s.clock()))
	if err != nil || math.IsNaN(spent) {
		s.logf("web: spend ledger: %v", err)
		return false, WhyLedger
	}
	if spent >= s.limits.DailySpendUSD {
		return false, WhySpendCap
	}
	return true, ""
}

// charge adds a live run's model spend to the ledger. An amount the ledger cannot take is kept,
// on its day, and live runs stop until it is written.
func (s *Server) charge(usd float64) {
	if s.ledger == nil || !(usd > 0) || math.IsInf(usd, 0) {
		return
	}
	s.ledgerMu.Lock()
	defer s.ledgerMu.Unlock()
	if s.unpaid == nil {
		s.unpaid = map[string]float64{}
	}
	s.unpaid[audit.Day(s.clock())] += usd
	if err := s.flushLocked(context.Background()); err != nil {
		s.logf("web: spend ledger: charging $%.4f: %v", usd, err)
	}
}

// flushLocked writes the unpaid amounts to the ledger. s.ledgerMu is held.
func (s *Server) flushLocked(ctx context.Context) error {
	for day, usd := range s.unpaid {
		if err := s.ledger.AddSpend(ctx, day, usd); err != nil {
			return err
		}
		delete(s.unpaid, day)
	}
	return nil
}

// unpaidCount is the number of days with spend not yet in the ledger.
func (s *Server) unpaidCount() int {
	s.ledgerMu.Lock()
	defer s.ledgerMu.Unlock()
	return len(s.unpaid)
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
	rec     Recording
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
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return admitted{}, &limitError{msg: "the server is stopping", retry: 30 * time.Second, stopping: true}
	}
	now := s.clock()
	live := s.windowLocked(s.visits, a.visitor, now)
	played := s.windowLocked(s.played, a.visitor, now)
	goLive := a.live
	kind, why, watch := KindPaused, a.why, ""
	per := "hour"
	if s.limits.Window != time.Hour {
		per = human(s.limits.Window)
	}
	running := min(s.live, s.limits.Concurrent)
	queued := s.live - running
	if goLive && len(live) >= s.limits.PerVisitor {
		goLive, kind = false, KindVisitor
		why = fmt.Sprintf("visitor limit: %s per %s; next live run in %s",
			plural(s.limits.PerVisitor, "live run"), per, human(live[0].Add(s.limits.Window).Sub(now)))
	} else if goLive && s.live >= s.limits.Concurrent+s.limits.Queue {
		goLive, kind = false, KindBusy
		why = fmt.Sprintf("busy: one live run at a time; %d running, %d waiting", running, queued)
		if s.limits.Concurrent > 1 {
			why = fmt.Sprintf("busy: %d live runs at a time; %d running, %d waiting", s.limits.Concurrent, running, queued)
		}
		watch = s.watchableLocked()
	}
	if !goLive && len(played) >= s.limits.Recorded {
		s.mu.Unlock()
		retry := played[0].Add(s.limits.Window).Sub(now)
		return admitted{}, &limitError{
			msg:   fmt.Sprintf("visitor limit: %s per %s; try again in %s", plural(s.limits.Recorded, "recorded run"), per, human(retry)),
			retry: retry, running: running, queued: queued,
		}
	}
	place := 0
	if goLive && s.live >= s.limits.Concurrent {
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
		s.visits[a.visitor] = append(live, now)
		s.live++
		s.liveRuns = append(s.liveRuns, r)
		if place > 0 {
			s.queue = append(s.queue, r)
		}
	} else {
		s.played[a.visitor] = append(played, now)
	}
	left := max(0, s.limits.PerVisitor-len(s.visits[a.visitor]))
	s.pruneVisitsLocked(now)
	s.runs[r.id] = r
	s.order = append(s.order, r.id)
	s.evictLocked()
	// The caller starts the run's goroutine; counting it here, under the lock that Close takes
	// first, keeps Add from racing Close's Wait.
	s.wg.Add(1)
	r.setState(state, place, nil)
	s.mu.Unlock()
	s.persistAdmission(r, now, goLive, place > 0)
	return admitted{run: r, live: goLive, left: left}, nil
}

// windowLocked returns visitor's times in m that are within the window. s.mu is held.
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	live := s.windowLocked(s.visits, visitor, now)
	left := max(0, s.limits.PerVisitor-len(live))
	if len(live) == 0 {
		return left, 0
	}
	return left, live[0].Add(s.limits.Window).Sub(now)
}

// liveRunID is the ID of the live run in progress that anyone may watch, "" when none.
func (s *Server) liveRunID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watchableLocked()
}

// watchableLocked is the live run in progress offered to other visitors to watch: a preset's only,
// whose task is ours; a typed task is its visitor's words and is not offered. s.mu is held.
func (s *Server) watchableLocked() string {
	for _, r := range s.liveRuns {
		if info := r.snapshot().RunInfo; info.State == StateRunning && info.Preset != "" {
			return r.id
		}
	}
	return ""
}

// pruneVisitsLocked forgets visitors with no run in the window, so the map stays bounded by the
// visitors of the last window.
func (s *Server) pruneVisitsLocked(now time.Time) {
	if len(s.visits)+len(s.played) < 1024 {
		return
	}
	for _, m := range []map[string][]time.Time{s.visits, s.played} {
		for v, ts := range m {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= s.limits.Window {
				delete(m, v)
			}
		}
	}
}

// evictLocked forgets the oldest finished runs beyond KeepRuns.
func (s *Server) evictLocked() {
	for i := 0; len(s.order) > s.limits.KeepRuns && i < len(s.order); {
		r := s.runs[s.order[i]]
		if r != nil && !r.isDone() {
			i++
			continue
		}
		delete(s.runs, s.order[i])
		s.order = append(s.order[:i], s.order[i+1:]...)
	}
}

func (s *Server) lookup(id string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// startLive runs r in the background: it waits for a slot (when it was queued, re-checking the
// ledger once it has one) and runs the task.
func (s *Server) startLive(r *run, task string, preset presets.Preset) {
	waited := r.snapshot().State == StateQueued
	go func() {
		defer s.wg.Done()
		select {
		case s.slots <- struct{}{}:
		case <-s.draining:
			s.dequeue(r)
			s.doneLive(r)
			r.finish(stoppedResult(r.snapshot().RunInfo, s.clock().UTC()))
			return
		case <-s.ctx.Done():
			s.dequeue(r)
			s.doneLive(r)
			r.finish(stoppedResult(r.snapshot().RunInfo, s.clock().UTC()))
			return
		}
		select {
		case <-s.draining: // a slot came free as the server began to stop: the run does not start
			<-s.slots
			s.dequeue(r)
			s.doneLive(r)
			r.finish(stoppedResult(r.snapshot().RunInfo, s.clock().UTC()))
			return
		default:
		}
		s.dequeue(r)
		if waited {
			if ok, why := s.liveAllowed(s.ctx); !ok {
				<-s.slots
				s.doneLive(r)
				rec, other, found := s.recordingFor(task, preset)
				r.setState(StateRunning, 0, func(i *RunInfo) { recorded(i, rec, other, found, why) })
				s.playback(r, rec, found)
				return
			}
			r.setState(StateRunning, 0, nil)
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.limits.RunDeadline+30*time.Second)
		defer cancel()
		opts := []coordinator.Option{coordinator.WithClock(s.clock), coordinator.WithDeadline(s.limits.RunDeadline)}
		rec := s.rec
		if rec == nil {
			rec = noRecorder{}
		}
		opts = append(opts, coordinator.WithRecorder(sameID{rec, r.id}))
		var timeline []Moment
		size := 0
		res, browser := Execute(ctx, RunSpec{
			Policy: s.pol, Task: task, Preset: preset, Model: s.model, ModelName: s.modelName,
			Launch: s.launch, Options: opts, Frames: s.frames, SignIn: s.signInFunc(r),
		}, func(m Moment) {
			if size += len(m.Frame); size <= maxRecentSize && m.Phase == "" {
				timeline = append(timeline, m)
			}
			r.moment(m)
		})
		s.keepRecent(preset, res, browser, timeline, size)
		// Charged and the slot given back before the result is out: whoever sees the result can
		// start the next run, and it is checked against this run's spend.
		s.charge(res.Usage.CostUSD)
		<-s.slots
		s.doneLive(r)
		r.finish(resultJSON(res))
	}()
}

// maxRecentSize bounds the frames kept of a live run for playing it again.
const maxRecentSize = 16 << 20

// keepRecent keeps a live run of a preset that ended as the preset expects, whole and in memory,
// as the recording played for that preset from now on (the latest real run). Nothing of it is
// written anywhere.
func (s *Server) keepRecent(preset presets.Preset, res coordinator.Result, browser string, timeline []Moment, size int) {
	if preset.Name == "" || res.Status != preset.Expect || size > maxRecentSize || browser == "" {
		return
	}
	rec := Recording{
		Format: RecordingFormat, Preset: preset.Name, RecordedAt: res.EndedAt.UTC(), Browser: browser,
		Result: resultJSON(res), Timeline: timeline,
	}
	if rec.Validate() != nil {
		return
	}
	s.recentMu.Lock()
	s.recent[preset.Name] = rec
	s.recentMu.Unlock()
}

// doneLive gives back a live run's count.
func (s *Server) doneLive(r *run) {
	s.mu.Lock()
	s.live--
	if i := slices.Index(s.liveRuns, r); i >= 0 {
		s.liveRuns = slices.Delete(s.liveRuns, i, i+1)
	}
	s.mu.Unlock()
}

// dequeue takes r out of the queue and tells the runs behind it their new place.
func (s *Server) dequeue(r *run) {
	s.mu.Lock()
	i := slices.Index(s.queue, r)
	if i < 0 {
		s.mu.Unlock()
		return
	}
	s.queue = slices.Delete(s.queue, i, i+1)
	behind := slices.Clone(s.queue[i:])
	s.mu.Unlock()
	if s.visitLog != nil {
		if err := s.visitLog.Dequeue(context.Background(), r.id); err != nil {
			s.logf("web: visit log: %v", err)
		}
	}
	for j, q := range behind {
		q.setState(StateQueued, i+j+1, nil)
	}
}

// recordingFor picks the recorded run played for a task: the preset's own, else the preset of the
// same record, else the lookup preset.
func (s *Server) recordingFor(task string, preset presets.Preset) (Recording, bool, bool) {
	if rec, ok := s.recording(preset.Name); ok && preset.Name != "" {
		return rec, false, true
	}
	t, _ := s.pol.ParseTask(task)
	for _, p := range presets.All() {
		pt, _ := s.pol.ParseTask(p.Task)
		if rec, ok := s.recording(p.Name); ok && !p.Simulated && pt.RecordID == t.RecordID {
			return rec, rec.Result.Task != task, true
		}
	}
	rec, ok := s.recording("lookup")
	return rec, true, ok
}

// recording is the recording of a preset: the latest live run of it (keepRecent), else the
// embedded one.
func (s *Server) recording(preset string) (Recording, bool) {
	s.recentMu.Lock()
	rec, ok := s.recent[preset]
	s.recentMu.Unlock()
	if ok {
		return rec, true
	}
	rec, ok = s.recordings[preset]
	return rec, ok
}

// recorded labels a run that plays rec (ok: there is one) because of why.
func recorded(info *RunInfo, rec Recording, other, ok bool, why string) {
	if !ok {
		info.Recorded = &RecordedInfo{Kind: KindPaused, Why: why}
		return
	}
	info.Recorded = &RecordedInfo{
		Kind: KindPaused, Why: why, Preset: rec.Preset, Task: rec.Result.Task, Model: rec.Result.Model, Browser: rec.Browser,
		RecordedAt: rec.RecordedAt, OtherTask: other,
	}
	info.Model = rec.Result.Model
	info.Simulated = rec.Result.Simulated
}

// startPlayback plays a recorded run in the background.
func (s *Server) startPlayback(r *run, rec Recording, ok bool) {
	go func() {
		defer s.wg.Done()
		s.playback(r, rec, ok)
	}()
}

// playback plays a recorded run in place of a live one, paced like the real run. r's info already
// carries the recorded label.
func (s *Server) playback(r *run, rec Recording, ok bool) {
	info := r.snapshot().RunInfo
	if !ok {
		r.finish(errorResult(info, s.clock().UTC(), "live runs are paused ("+info.Recorded.Why+") and no recorded run is available"))
		return
	}
	prev := int64(0)
	for _, m := range rec.Timeline {
		gap := time.Duration(float64(time.Duration(m.AtMS-prev)*time.Millisecond) * s.speed)
		prev = m.AtMS
		if gap > s.maxGap {
			gap = s.maxGap
		}
		if gap > 0 {
			t := time.NewTimer(gap)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				r.finish(stoppedResult(info, s.clock().UTC()))
				return
			}
		}
		r.moment(m)
	}
	r.finish(rec.Result)
}

// newRunID is a run's ID: the API's and, for a live run, the audit store's (see sameID).
func newRunID() string { return audit.NewRunID() }

// sameID records a live run in the audit store under the ID the API gave it, so that one ID
// names the run on the page, in the API and in "browser-agent audit".
type sameID struct {
	coordinator.Recorder
	id string
}

// noRecorder records nothing: the run keeps the API's ID without an audit store.
type noRecorder struct{}

func (noRecorder) BeginRun(_ context.Context, rr audit.Run) (string, error) {
	return rr.ID, nil
}
func (noRecorder) AddStep(context.Context, audit.Step) error  { return nil }
func (noRecorder) FinishRun(context.Context, audit.Run) error { return nil }

func (r sameID) BeginRun(ctx context.Context, rr audit.Run) (string, error) {
	if rr.ID == "" {
		rr.ID = r.id
	}
	return r.Recorder.BeginRun(ctx, rr)
}

// human writes a duration for a person: "15 s", "3 min", "1 h".
func human(d time.Duration) string {
	switch {
	case d < time.Second:
		return "1 s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(math.Ceil(d.Seconds())))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(math.Ceil(d.Minutes())))
	default:
		return fmt.Sprintf("%d h", int(math.Ceil(d.Hours())))
	}
}

// retrySeconds is a Retry-After value: whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
