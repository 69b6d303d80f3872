package coordinator_test

import (
	"context"
	"errors"
	"github.com/browser-agent/browser-agent/audit"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// orderRecorder is a fakeRecorder that notes, in one log with the browser's events, when a run
// begins and finishes.
type orderRecorder struct {
	*fakeRecorder
	log *eventLog
}

type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.evs, " ")
}

func (o orderRecorder) BeginRun(ctx context.Context, r audit.Run) (string, error) {
	o.log.add("begin")
	return o.fakeRecorder.BeginRun(ctx, r)
}

func (o orderRecorder) FinishRun(ctx context.Context, r audit.Run) error {
	o.log.add("finish:" + string(r.Status))
	return o.fakeRecorder.FinishRun(ctx, r)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestWriteAhead: the run is recorded before the browser is launched, and the browser is closed
// before the end is recorded, whether the run answers, is interrupted, or its launch fails.
func TestWriteAhead(t *testing.T) {
	pol := demoPolicy(t, "http://127.0.0.1:8081")
	launched := func(log *eventLog, err error) coordinator.Launcher {
		return func(context.Context, *policy.Policy) (coordinator.Browser, io.Closer, error) {
			log.add("launch")
			if err != nil {
				return nil, nil, err
			}
			return browsertest.NewPages(nil), closerFunc(func() error { log.add("close"); return nil }), nil
		}
	}
	tests := []struct {
		name      string
		model     coordinator.Model
		launchErr error
		cancel    bool
		want      string
		reason    string
	}{
		{"blocked", script(cannotAnswer("no")), nil, false, "begin launch close finish:blocked", "model could not answer"},
		{"interrupted", slowModel("http://127.0.0.1:8081"), nil, true, "begin launch close finish:interrupted", "interrupted: SIGTERM received"},
		{"launch fails with logs", script(cannotAnswer("no")),
			errors.New("launch: chromium: exit status 1\nBrowser logs: /usr/bin/chromium --headless --user-data-dir=/tmp/x ..."), false,
			"begin launch finish:error", "browser: " + coordinator.ReasonLaunch},
		{"launch fails short", script(cannotAnswer("no")), errors.New("chromium not found: run scripts/setup"), false,
			"begin launch finish:error", "browser: chromium not found: run scripts/setup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &eventLog{}
				rec := orderRecorder{newRecorder(), log}
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				if tc.cancel {
					time.AfterFunc(10*time.Second, func() { cancel(&coordinator.Interrupt{Why: "SIGTERM received"}) })
				}
				res := coordinator.New(pol, coordinator.WithRecorder(rec)).Run(ctx, coordinator.RunArgs{
					Task: "Look up SYN-0042", Model: tc.model, Launch: launched(log, tc.launchErr)})
				if got := log.String(); got != tc.want {
					t.Errorf("order:\n\tgot  %s\n\twant %s", got, tc.want)
				}
				if res.Reason != tc.reason {
					t.Errorf("reason:\n\tgot  %q\n\twant %q", res.Reason, tc.reason)
				}
				if r := rec.runs[res.RunID]; string(r.Status) != strings.TrimPrefix(strings.Fields(tc.want)[len(strings.Fields(tc.want))-1], "finish:") || r.Reason != tc.reason {
					t.Errorf("recorded: %s %q", r.Status, r.Reason)
				}
			})
		})
	}
}

// TestInterruptBeforeRun: a run interrupted before it starts is still recorded, interrupted.
func TestInterruptBeforeRun(t *testing.T) {
	rec := newRecorder()
	ctx, cancel := context.WithCancelCause(t.Context())
	in := &coordinator.Interrupt{Why: "SIGINT received"}
	cancel(in)
	res := coordinator.New(nil, coordinator.WithRecorder(rec)).Interrupted(ctx, coordinator.RunArgs{Task: "Look up SYN-0042"}, in)
	if r := rec.runs[res.RunID]; res.Status != coordinator.StatusInterrupted || r.Status != string(coordinator.StatusInterrupted) || r.Reason != "interrupted: SIGINT received" {
		t.Errorf("got %s, recorded %+v", res.Status, r)
	}
}

// deadBrowser fails every call, and says its process is gone.
type deadBrowser struct{ *browsertest.Pages }

func (deadBrowser) Open(ctx context.Context, url string) (browse.Page, error) {
	return browse.Page{}, errors.New("target closed")
}
func (deadBrowser) Alive() error { return errors.New("Chromium exited") }

// TestBrowserExited: a browser call that fails because Chromium is gone ends the run error, with
// the reason the browser gives, instead of handing the model a browser error.
func TestBrowserExited(t *testing.T) {
	d := startDemo(t)
	rec := newRecorder()
	res := coordinator.New(d.pol, coordinator.WithRecorder(rec)).Run(t.Context(), coordinator.RunArgs{
		Task: "Look up SYN-0042", Model: script(open(d.url("/records/SYN-0042")), cannotAnswer("no")),
		Browser: deadBrowser{browsertest.NewPages(nil)}})
	if res.Status != coordinator.StatusError || res.Reason != "browser: Chromium exited" || len(res.Steps) != 1 {
		t.Errorf("got %s %q, %d steps; want error \"browser: Chromium exited\", 1 step", res.Status, res.Reason, len(res.Steps))
	}
}

// walledBrowser says how the operating system walls it in.
type walledBrowser struct {
	*browsertest.Pages
	wall string
}

func (w walledBrowser) Wall() string { return w.wall }

// TestWallRecorded: the run's audit row records the browser's line about the wall, as its
// Launcher returned the browser (or as a session was given it); a browser that cannot say leaves
// it empty.
func TestWallRecorded(t *testing.T) {
	d := startDemo(t)
	for _, tc := range []struct {
		browser coordinator.Browser
		want    string
	}{
		{walledBrowser{browsertest.NewPages(nil), "on: network namespace with loopback only (root)"}, "on: network namespace with loopback only (root)"},
		{walledBrowser{browsertest.NewPages(nil), "off: no network namespace can be made here"}, "off: no network namespace can be made here"},
		{browsertest.NewPages(nil), ""},
	} {
		rec := newRecorder()
		b := tc.browser
		res := coordinator.New(d.pol, coordinator.WithRecorder(rec)).Run(t.Context(), coordinator.RunArgs{
			Task: "Look up SYN-0042", Model: script(cannotAnswer("no")),
			Launch: func(context.Context, *policy.Policy) (coordinator.Browser, io.Closer, error) {
				return b, io.NopCloser(nil), nil
			}})
		if got := rec.runs[res.RunID].Wall; got != tc.want {
			t.Errorf("recorded wall %q, want %q", got, tc.want)
		}
		// A session (the MCP server's) is given its browser: its row says the same.
		srec := newRecorder()
		cs, err := coordinator.New(d.pol, coordinator.WithRecorder(srec)).StartSession(t.Context(), coordinator.SessionArgs{Browser: b, ModelName: "mcp:test"})
		if err != nil {
			t.Fatal(err)
		}
		if got := srec.runs[cs.RunID()].Wall; got != tc.want {
			t.Errorf("session's row at its start: wall %q, want %q", got, tc.want)
		}
		res = cs.End(t.Context(), "done")
		if got := srec.runs[res.RunID].Wall; got != tc.want {
			t.Errorf("session's row at its end: wall %q, want %q", got, tc.want)
		}
	}
}
