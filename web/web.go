package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
	"github.com/browser-agent/browser-agent/web/internal/demostate"
)

// WithVisitLog keeps what the limits count in the audit database db (audit.Store.SQL), so that
// it survives a restart: each visitor's runs (under a salted hash, never the address) and the
// runs waiting in the queue (web/internal/demostate, which New lets create its tables there).
func WithVisitLog(db audit.SQL) Option {
	return func(s *Server) { s.visitDB = &db }
}

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
		RunDeadline: runner.DefaultRunDeadline, BusyRetry: 15 * time.Second, Streams: 256, VisitorStream: 8, KeepRuns: 64,
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
func WithLauncher(l coordinator.Launcher) Option { return func(s *Server) { s.launch = l } }

// WithModel sets the model of live runs: name is recorded when f fails, f builds one per run.
func WithModel(name string, f runner.ModelFunc) Option {
	return func(s *Server) { s.modelName, s.model = name, f }
}

// WithRecorder records every live run and its steps (the audit store).
func WithRecorder(r coordinator.Recorder) Option { return func(s *Server) { s.rec = r } }

// WithLedger sets the spend ledger. Without one, no live run is allowed: recorded runs play.
func WithLedger(l runner.Ledger) Option { return func(s *Server) { s.ledger = l } }

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

// WithPresets sets the ready-made tasks the page offers and the API runs by name, in the page's
// order (the demo's: demo-site/presets). Without it there are none: only typed tasks.
func WithPresets(ps ...coordinator.Preset) Option {
	return func(s *Server) { s.offered = append([]coordinator.Preset(nil), ps...) }
}

// WithFieldOrder sets the order an answer's fields are shown in: these labels first, the rest
// alphabetically (the demo's: presets.FieldOrder). Without it, all alphabetically.
func WithFieldOrder(labels ...string) Option {
	return func(s *Server) { s.fieldOrder = append([]string(nil), labels...) }
}

// WithRecordings sets the recorded runs played instead of live ones: the *.json files at the top
// of fsys (runner.LoadRecordings), each of a preset (the demo's: presets.Recorded). Without it there are
// none.
func WithRecordings(fsys fs.FS) Option { return func(s *Server) { s.recordingsFS = fsys } }

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
	launch     coordinator.Launcher
	model      runner.ModelFunc
	modelName  string
	rec        coordinator.Recorder
	ledger     runner.Ledger
	visitDB    *audit.SQL     // WithVisitLog's database; New opens visitLog in it
	visitLog   *demostate.Log // nil without WithVisitLog
	salt       []byte         // keys visitor hashes when there is a visit log
	clock      func() time.Time
	limits     Limits
	trusted    []netip.Prefix
	origins    map[string]bool
	offered    []coordinator.Preset
	fieldOrder []string
	recordings map[string]runner.Recording
	// recordingsFS holds the recordings until New loads them (WithRecordings).
	recordingsFS fs.FS
	speed        float64
	maxGap       time.Duration
	frames       bool
	// recordedOnly: every run plays a recording (WithRecordedOnly).
	recordedOnly bool
	prewarm      bool
	pool         *runner.Pool
	q            *queueState        // set by WithQueue: live runs go through the run queue (queue.go)
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

	// Each job's state under its own lock; none is taken while another is held, except that admit
	// names the run it admits (reg) under adm's lock.
	adm     admissions // admission: live runs, the queue, each visitor's runs in the window
	reg     registry   // the runs the API can name
	streams streamGate // open event streams
	spend   *spendBook // spend not yet written to the ledger
	recent  recentRuns // the latest live run of each preset that ended as expected
}

// New returns a Server for pol.
func New(pol *policy.Policy, opts ...Option) (*Server, error) {
	if pol == nil || len(pol.Sites()) == 0 {
		return nil, errors.New("web: a policy with at least one site is needed")
	}
	s := &Server{
		pol: pol, clock: time.Now, limits: DefaultLimits(), origins: map[string]bool{},
		speed: 1, maxGap: 1500 * time.Millisecond, frames: true, logf: func(string, ...any) {},
		adm:       admissions{visits: map[string][]time.Time{}, played: map[string][]time.Time{}},
		reg:       registry{runs: map[string]*run{}},
		streams:   streamGate{byVis: map[string]int{}},
		recent:    recentRuns{byPreset: map[string]runner.Recording{}},
		leaseIdle: DefaultLeaseIdle, leaseMax: DefaultLeaseMax,
	}
	for _, o := range opts {
		o(s)
	}
	s.spend = &spendBook{ledger: s.ledger, cap: s.limits.DailySpendUSD, clock: s.clock, logf: s.logf}
	if s.leaseIdle < time.Second || s.leaseMax < s.leaseIdle {
		return nil, fmt.Errorf("web: a takeover lease needs an idle time of at least 1s and a maximum no shorter (got %v and %v)", s.leaseIdle, s.leaseMax)
	}
	s.recordings = map[string]runner.Recording{}
	if s.recordingsFS != nil {
		recs, err := runner.LoadRecordings(s.recordingsFS)
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		for _, r := range recs {
			s.recordings[r.Preset] = r
		}
	}
	for _, r := range s.recordings {
		if err := r.OfPreset(s.offered); err != nil {
			return nil, fmt.Errorf("web: recorded run of preset %q: %w", r.Preset, err)
		}
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
			s.pool, s.poolStop = runner.NewPool(pctx, launch, s.pol, time.Now), stop
			s.launch = func(ctx context.Context, _ *policy.Policy) (coordinator.Browser, io.Closer, error) {
				return s.pool.Take(ctx, runner.PhaseOf(ctx))
			}
		} else {
			s.launch = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
				runner.PhaseOf(ctx)(runner.PhaseCold)
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
	s.adm.mu.Lock()
	s.adm.closed = true
	s.adm.mu.Unlock()
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
		s.pool.Wait()
	}
	return nil
}

var _ http.Handler = (*Server)(nil)

// ServeHTTP serves the page, its static files and the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// startLive runs r in the background: it waits for a slot (when it was queued, re-checking the
// ledger once it has one) and runs the task.
func (s *Server) startLive(r *run, task string, preset coordinator.Preset) {
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
		if s.q != nil { // the run goes through the queue (queue.go)
			res := s.viaQueue(r, task, preset)
			<-s.slots
			s.doneLive(r)
			r.finish(res)
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.limits.RunDeadline+30*time.Second)
		defer cancel()
		rec := s.rec
		if rec == nil {
			rec = noRecorder{}
		}
		res := s.execLive(ctx, r, task, preset, sameID{rec, r.id})
		<-s.slots
		s.doneLive(r)
		r.finish(runner.ResultOf(res, s.fieldOrder))
	}()
}

// execLive runs r's task with its live view, recording through rec, keeps it for replay when it
// ended as expected and charges its spend.
func (s *Server) execLive(ctx context.Context, r *run, task string, preset coordinator.Preset, rec coordinator.Recorder) coordinator.Result {
	opts := []coordinator.Option{coordinator.WithClock(s.clock), coordinator.WithDeadline(s.limits.RunDeadline), coordinator.WithRecorder(rec)}
	var timeline []runner.Moment
	size := 0
	res, browser := runner.Execute(ctx, runner.RunSpec{
		Policy: s.pol, Task: task, Preset: preset, Model: s.model, ModelName: s.modelName,
		Launch: s.launch, Options: opts, Frames: s.frames, SignIn: s.signInFunc(r),
	}, func(m runner.Moment) {
		if size += len(m.Frame); size <= maxRecentSize && m.Phase == "" {
			timeline = append(timeline, m)
		}
		r.moment(m)
	})
	s.keepRecent(preset, res, browser, timeline, size)
	// Charged before the slot is given back and the result is out: whoever sees the result
	// can start the next run, and it is checked against this run's spend.
	s.spend.charge(res.Usage.CostUSD)
	return res
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
