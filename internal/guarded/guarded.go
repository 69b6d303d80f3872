package guarded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/startup"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// Interface guards: the browser is the coordinator's, and it reports the requests decided beneath
// the tools.
var (
	_ coordinator.Browser   = (*Browser)(nil)
	_ coordinator.EgressLog = (*Browser)(nil)
	_ coordinator.Liveness  = (*Browser)(nil)
	_ coordinator.Walled    = (*Browser)(nil)
)

// MaxPendingDecisions bounds the request decisions kept between two steps, so that a page firing
// thousands of requests cannot grow the audit without bound. The excess is counted.
const MaxPendingDecisions = 500

// Browser is a bridge session behind its own egress proxy. Close stops both.
type Browser struct {
	*bridge.Session
	proxy *proxy.Proxy
	rt    *bridge.Runtime // the driver, when the Browser started its own (LaunchWith)
	log   DecisionLog
}

// DecisionLog keeps the request decisions taken between two steps, at most MaxPendingDecisions
// (the excess is counted), for the audit rows under the next step. The zero value is ready.
type DecisionLog struct {
	mu      sync.Mutex
	pending []policy.Entry
	dropped int
}

// Note keeps one decision. It is safe for concurrent use.
func (l *DecisionLog) Note(d policy.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) >= MaxPendingDecisions {
		l.dropped++
		return
	}
	l.pending = append(l.pending, d)
}

// Take returns the decisions noted since the last Take, and a denied entry that counts the
// ones not kept.
func (l *DecisionLog) Take() []policy.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	if l.dropped > 0 {
		out = append(out, policy.Entry{
			Verdict: policy.Deny, Layer: policy.LayerBrowser,
			Reason: fmt.Sprintf("%d more request decisions not recorded", l.dropped),
		})
	}
	l.pending, l.dropped = nil, 0
	return out
}

// Launch starts the egress proxy and a dedicated Chromium that can reach nothing but through it.
// opts are appended to the bridge's options (a logger, a settle time); a decision hook among them
// replaces the one that feeds TakeDecisions.
func Launch(ctx context.Context, pol *policy.Policy, opts ...bridge.Option) (*Browser, error) {
	return LaunchWith(ctx, pol, nil, opts...)
}

// LaunchWith is Launch with options for the egress proxy too (proxy.WithUpstreamRoots for a
// private deployment's authority). A decided hook among them replaces the one that feeds
// TakeDecisions.
//
// The Playwright driver (a Node process, the slowest part of a cold start) starts while the proxy
// does; the Browser owns it and stops it on Close.
//
// Every phase is bounded (startup.Timeout each): a driver or a Chromium that does not answer is
// stopped and the error says which, where and what fixes it. When ctx ends (a signal) the phase
// under way stops at once: the driver's start is killed, and a Chromium launch ends with its
// driver. LaunchWith returns only once nothing it started runs, or once all of it runs.
func LaunchWith(ctx context.Context, pol *policy.Policy, popts []proxy.Option, opts ...bridge.Option) (*Browser, error) {
	type started struct {
		rt  *bridge.Runtime
		err error
	}
	if err := startup.Begin(ctx, "driver"); err != nil {
		return nil, err
	}
	dctx, dcancel := context.WithTimeout(ctx, startup.Timeout())
	defer dcancel()
	driver := make(chan started, 1)
	go func() {
		rt, err := bridge.NewRuntimeContext(dctx, opts...)
		driver <- started{rt, err}
	}()
	// The driver's result is taken once, by whichever needs it first: the Chromium launch, or
	// the clean-up after a failure of the proxy.
	result := sync.OnceValue(func() started { return <-driver })
	start := func(ctx context.Context, pol *policy.Policy, o ...bridge.Option) (*bridge.Session, error) {
		d := result()
		if d.err != nil {
			return nil, d.err
		}
		if err := startup.Begin(ctx, "chromium"); err != nil {
			return nil, err
		}
		// A signal during the launch kills the driver and its Chromium, which ends the launch (a
		// graceful stop would let the driver wait 30 s for a Chromium that does not answer).
		closed := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			d.rt.Kill()
			close(closed)
		})
		lctx, cancel := context.WithTimeout(ctx, startup.Timeout())
		defer cancel()
		s, err := d.rt.Launch(lctx, pol, o...)
		if !stop() {
			<-closed
		}
		return s, err
	}
	g, err := launch(ctx, start, pol, popts, opts)
	if err != nil {
		dcancel() // the proxy failed first: the driver may still be starting
		if d := result(); d.err == nil {
			_ = d.rt.Close()
		}
		return nil, err
	}
	g.rt = result().rt
	return g, nil
}

// LaunchOn is Launch with the Chromium started by rt, a driver that stays up across runs: only the
// browser and the proxy are new. Close leaves rt running. popts are as for LaunchWith.
func LaunchOn(ctx context.Context, rt *bridge.Runtime, pol *policy.Policy, popts []proxy.Option, opts ...bridge.Option) (*Browser, error) {
	return launch(ctx, rt.Launch, pol, popts, opts)
}

func launch(ctx context.Context, start func(context.Context, *policy.Policy, ...bridge.Option) (*bridge.Session, error),
	pol *policy.Policy, popts []proxy.Option, opts []bridge.Option) (*Browser, error) {
	if err := startup.Begin(ctx, "proxy"); err != nil {
		return nil, err
	}
	g := &Browser{}
	// Each proxy decision is noted as soon as it is taken, before the request is forwarded (a
	// request inside an https tunnel as much as a plain one), so it lands in the audit under the
	// step during which it was sent, even if its response never ends.
	px, err := proxy.Start(ctx, pol, append([]proxy.Option{proxy.WithDecidedHook(func(d proxy.Decision) {
		g.note(d.Entry)
	})}, popts...)...)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	user, pass := px.Credentials()
	bopts := []bridge.Option{
		bridge.WithProxy(px.Server(), user, pass),
		bridge.WithExtraArgs(px.ChromiumArgs()...),
		// The proxy intercepts every https tunnel: the bridge's fetches trust its authority only.
		bridge.WithProxyRoots(px.RootCAs()),
		bridge.WithDecisionHook(func(d bridge.RequestDecision) {
			// Lets the proxy count a request it denies after the browser layer allowed it.
			if d.Verdict == policy.Allow {
				px.NoteBrowserAllowed(d.Method, d.URL())
			}
			g.note(d.Entry)
		}),
	}
	s, err := start(ctx, pol, append(bopts, opts...)...)
	if err != nil {
		px.Close()
		return nil, err
	}
	g.Session, g.proxy = s, px
	return g, nil
}

func (g *Browser) note(d policy.Entry) { g.log.Note(d) }

// TakeDecisions returns the requests decided by the browser layer and the proxy since the last
// call. It implements coordinator.EgressLog.
func (g *Browser) TakeDecisions() []policy.Entry { return g.log.Take() }

// ErrBrowserExited is what Alive returns when the run's Chromium is gone.
var ErrBrowserExited = errors.New("Chromium or its driver exited during the run (killed, crashed or out of memory); run the task again")

// Alive reports whether the run's Chromium still runs: ErrBrowserExited when its process has
// ended (a zombie counts as ended). It implements coordinator.Liveness.
func (g *Browser) Alive() error {
	pid := g.Session.PID()
	if pid <= 0 {
		return nil // not known: the errors of the next call will tell
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return ErrBrowserExited
	}
	if err != nil {
		return nil
	}
	if i := strings.LastIndexByte(string(data), ')'); i >= 0 {
		if f := strings.Fields(string(data)[i+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return ErrBrowserExited
		}
	}
	return nil
}

// Proxy is the run's egress proxy, for its counters.
func (g *Browser) Proxy() *proxy.Proxy { return g.proxy }

// Close stops the browser, then its driver when the Browser started it, then the proxy.
func (g *Browser) Close() error {
	err := g.Session.Close()
	if g.rt != nil {
		err = errors.Join(err, g.rt.Close())
	}
	return errors.Join(err, g.proxy.Close())
}

// SetSignInLease sets the sign-in lease on both layers: the bridge (the page may submit to a
// sign-in route the policy names) and the egress proxy (it forwards that write). Only the serve
// layer calls it, for the person who holds a takeover lease; it is not a coordinator.Browser
// method, so no tool reaches it.
func (g *Browser) SetSignInLease(held bool) {
	// Open the network layer last and close it first: neither layer ever allows alone a write the
	// other would not.
	if held {
		g.Session.SetSignInLease(true)
		g.proxy.SetSignInLease(true)
		return
	}
	g.proxy.SetSignInLease(false)
	g.Session.SetSignInLease(false)
}
