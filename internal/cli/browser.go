package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// Interface guards: the bridge's session is the coordinator's browser, and the guarded browser
// reports the requests decided beneath the tools.
var (
	_ coordinator.Browser   = (*bridge.Session)(nil)
	_ coordinator.EgressLog = (*guardedBrowser)(nil)
)

// guardedBrowser is a run's dedicated Chromium behind the run's own egress proxy: the bridge decides
// every request in the browser, and the proxy decides it again at the network layer, so what the
// browser layer misses still cannot leave.
type guardedBrowser struct {
	*bridge.Session
	proxy *proxy.Proxy

	mu      sync.Mutex
	pending []coordinator.NetDecision
	dropped int
}

// maxPendingDecisions bounds the request decisions kept between two steps; a page that fires
// thousands of requests cannot grow the audit without bound. The excess is counted.
const maxPendingDecisions = 500

func (g *guardedBrowser) note(d coordinator.NetDecision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) >= maxPendingDecisions {
		g.dropped++
		return
	}
	g.pending = append(g.pending, d)
}

// TakeDecisions returns the requests decided by the browser layer and the proxy since the last
// call. It implements coordinator.EgressLog.
func (g *guardedBrowser) TakeDecisions() []coordinator.NetDecision {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.pending
	if g.dropped > 0 {
		out = append(out, coordinator.NetDecision{
			Verdict: policy.Deny, Layer: coordinator.LayerBrowser,
			Reason: fmt.Sprintf("%d more request decisions not recorded", g.dropped),
		})
	}
	g.pending, g.dropped = nil, 0
	return out
}

// Close stops the browser, then the proxy.
func (g *guardedBrowser) Close() error {
	return errors.Join(g.Session.Close(), g.proxy.Close())
}

// launchGuarded starts the run's egress proxy and a dedicated Chromium that can reach nothing but
// through it. Extra bridge options (a logger, a decision hook) are appended.
func launchGuarded(ctx context.Context, pol *policy.Policy, opts ...bridge.Option) (*guardedBrowser, error) {
	g := &guardedBrowser{}
	px, err := proxy.Start(ctx, pol, proxy.WithDecisionHook(func(d proxy.Decision) {
		g.note(coordinator.NetDecision{
			Method: d.Method, URL: d.Origin + d.Path, Verdict: d.Verdict,
			Rule: d.Rule, Reason: d.Reason, Layer: coordinator.LayerProxy,
		})
	}))
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	user, pass := px.Credentials()
	bopts := []bridge.Option{
		bridge.WithProxy(px.Server(), user, pass),
		bridge.WithExtraArgs(px.ChromiumArgs()...),
		bridge.WithDecisionHook(func(d bridge.RequestDecision) {
			// Lets the proxy count a request it denies after the browser layer allowed it.
			if d.Verdict == policy.Allow {
				px.NoteBrowserAllowed(d.Method, d.URL)
			}
			g.note(coordinator.NetDecision{
				Method: d.Method, URL: d.URL, Verdict: d.Verdict,
				Rule: d.Rule, Reason: d.Reason, Layer: coordinator.LayerBrowser,
			})
		}),
	}
	s, err := bridge.Launch(ctx, pol, append(bopts, opts...)...)
	if err != nil {
		px.Close()
		return nil, err
	}
	g.Session, g.proxy = s, px
	return g, nil
}

// launchBridge is the Launcher of "browser-agent run": the guarded browser.
func launchBridge(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	g, err := launchGuarded(ctx, pol)
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}
