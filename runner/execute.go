package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
)

// ModelFunc builds the model for one run.
type ModelFunc func() (coordinator.Model, error)

// Screenshotter is what the live view needs from a browser: *bridge.Session has it. A browser
// without it runs without a live view.
type Screenshotter interface {
	Screenshot(ctx context.Context) ([]byte, error)
}

var _ Screenshotter = (*bridge.Session)(nil)

// Why the live view has no frame.
const (
	ViewNoPage   = "no page open"           // the browser has not loaded a page (denials happen before any browser work)
	ViewWithheld = "sign-in page not shown" // a credential page: the bridge never shoots it
	ViewNone     = "no live view"           // the browser cannot take screenshots
	ViewFailed   = "screenshot failed"      // the browser could not take this one
	// ViewHandedBack: a person signed in and handed the browser back; the agent reads nothing of
	// the page they used and has not opened another yet.
	ViewHandedBack = "handed back"
	FrameTimeout   = 5 * time.Second // bounds one screenshot
	MaxFrameSize   = 4 << 20         // a larger screenshot is dropped
)

// Moment is one entry of a run's timeline: a step, or a change of the live view.
type Moment struct {
	AtMS  int64             `json:"at_ms"` // since the run began
	Step  *coordinator.Step `json:"step,omitempty"`
	Frame []byte            `json:"frame,omitempty"` // PNG of the agent's browser viewport
	View  string            `json:"view,omitempty"`  // why there is no frame: one of the View* phrases
	// Phase is a start phase of the run's browser (live runs only; never in a recording).
	Phase string `json:"phase,omitempty"`
}

// RunSpec is one run for Execute.
type RunSpec struct {
	Policy *policy.Policy
	Task   string
	Preset coordinator.Preset // the zero Preset for a typed task
	// FieldOrder orders the answer's fields in a captured recording (Capture; see
	// coordinator.Answer.Labels).
	FieldOrder []string
	Model      ModelFunc
	// ModelName is recorded when the model cannot be built.
	ModelName string
	Launch    coordinator.Launcher
	// Options are passed to the coordinator (recorder, clock, deadline); Execute adds its own
	// progress option.
	Options []coordinator.Option
	// Frames captures the live view: one screenshot after each step, when the browser can take it.
	Frames bool
	// SignIn, when set, is asked when a page holds a credential field: it waits for a person to
	// take over the run's browser (serve). Without it the run ends human_action_required.
	SignIn func(ctx context.Context, b coordinator.Browser, url string) (coordinator.Takeover, bool)
}

// Execute runs one task the way the command line does: the coordinator rejects a bad task or
// model before any browser work, then launches the browser and runs. It calls emit, from the run's goroutine,
// with each step as it is decided and each change of the live view. It returns the result and a
// description of the browser ("" when none was launched).
func Execute(ctx context.Context, spec RunSpec, emit func(Moment)) (coordinator.Result, string) {
	start := time.Now()
	at := func() int64 { return time.Since(start).Milliseconds() }
	var shots Screenshotter
	var last []byte
	lastView := ""
	view := func(ctx context.Context, after coordinator.Step) {
		if shots == nil {
			if lastView != ViewNone {
				lastView = ViewNone
				emit(Moment{AtMS: at(), View: ViewNone})
			}
			return
		}
		sctx, cancel := context.WithTimeout(ctx, FrameTimeout)
		png, err := shots.Screenshot(sctx)
		cancel()
		var v string
		switch {
		case err == nil && len(png) <= MaxFrameSize:
			if bytes.Equal(png, last) && lastView == "" {
				return
			}
			last, lastView = png, ""
			emit(Moment{AtMS: at(), Frame: png})
			return
		case errors.Is(err, bridge.ErrCredentialRequired):
			v = ViewWithheld
		case errors.Is(err, bridge.ErrNoPage) && after.Verdict == policy.Allow && strings.HasPrefix(after.Reason, coordinator.ReasonPersonActed):
			v = ViewHandedBack
		case errors.Is(err, bridge.ErrNoPage):
			v = ViewNoPage
		default:
			v = ViewFailed
		}
		if v != lastView {
			last, lastView = nil, v
			emit(Moment{AtMS: at(), View: v})
		}
	}
	progress := func(s coordinator.Step) {
		emit(Moment{AtMS: at(), Step: &s})
		if spec.Frames {
			view(context.WithoutCancel(ctx), s)
		}
	}
	opts := append(append([]coordinator.Option(nil), spec.Options...), coordinator.WithProgress(progress))
	var browser coordinator.Browser
	if spec.SignIn != nil {
		opts = append(opts, coordinator.WithSignIn(func(ctx context.Context, url string) (coordinator.Takeover, bool) {
			if browser == nil {
				return coordinator.Takeover{}, false
			}
			return spec.SignIn(ctx, browser, url)
		}))
	}
	c := coordinator.New(spec.Policy, opts...)
	ra := coordinator.RunArgs{Task: spec.Task, Preset: spec.Preset.Name, ModelName: spec.ModelName, EndOnDenial: spec.Preset.Simulated}
	if spec.Model != nil {
		// The coordinator makes the model only once the task has passed the policy.
		ra.NewModel = func(pol *policy.Policy) (coordinator.Model, error) {
			model, err := spec.Model()
			if err != nil {
				return nil, err
			}
			if spec.Preset.Simulated {
				model = spec.Preset.Model(model, pol.Sites()[0].Origin)
			}
			return model, nil
		}
	}
	// The coordinator records the run as running before it launches the browser (write ahead),
	// and closes the browser before it records the end. Each start phase is an event.
	desc := ""
	ra.Launch = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		if spec.Launch == nil {
			return nil, nil, errors.New("no launcher")
		}
		emit(Moment{AtMS: at(), Phase: PhaseStarting})
		b, closer, err := spec.Launch(WithPhase(ctx, func(p string) { emit(Moment{AtMS: at(), Phase: p}) }), pol)
		if err != nil {
			return nil, nil, err
		}
		emit(Moment{AtMS: at(), Phase: PhaseReady})
		shots, _ = b.(Screenshotter)
		browser = b
		desc = describeBrowser(b)
		return b, closer, nil
	}
	return c.Run(ctx, ra), desc
}

// describeBrowser names what drove a run, for recorded runs' labels.
func describeBrowser(b coordinator.Browser) string {
	if v, ok := b.(interface{ Version() string }); ok && v.Version() != "" {
		return "Chromium " + v.Version()
	}
	return fmt.Sprintf("%T", b)
}
