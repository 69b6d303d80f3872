package cli

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"

	"github.com/browser-agent/browser-agent/web"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// EnvUpstreamRoots names a PEM file of certificate authorities the egress proxy trusts for https
// sites besides the system roots: a private deployment's own, or a test's. Verification is never
// turned off.
const EnvUpstreamRoots = "BROWSER_AGENT_UPSTREAM_ROOTS"

// launchBridge is the coordinator.Launcher of "browser-agent run", serve and record: a dedicated Chromium
// behind the run's own egress proxy.
func launchBridge(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	return launchGuarded(ctx, nil, os.Getenv(EnvUpstreamRoots), pol)
}

// launchWithheldList is launchBridge with the debug switch on (bridge.WithWithheldList): each
// page's last read result lists the text nodes withheld, with reason and box.
func launchWithheldList(rootsFile string) coordinator.Launcher {
	return func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return launchGuarded(ctx, nil, rootsFile, pol, bridge.WithWithheldList(true))
	}
}

// SharedLauncher is the coordinator.Launcher of runs in one process that share the Playwright driver rt (the
// adversarial suite's in-process runs): each run still gets its own Chromium, profile and egress
// proxy, as launchBridge's does. rootsFile is as RunConfig.UpstreamRoots; opts are the bridge's
// (a logger that keeps a run's diagnostic lines with the run).
func SharedLauncher(rt *bridge.Runtime, rootsFile string, opts ...bridge.Option) coordinator.Launcher {
	return func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return launchGuarded(ctx, rt, rootsFile, pol, opts...)
	}
}

// launchGuarded starts the run's egress proxy (trusting the authorities of rootsFile besides the
// system's, when it is not "") and a dedicated Chromium behind it: on rt when it is not nil, else
// with a driver of its own that stops with the browser.
func launchGuarded(ctx context.Context, rt *bridge.Runtime, rootsFile string, pol *policy.Policy, opts ...bridge.Option) (coordinator.Browser, io.Closer, error) {
	popts, err := proxyOptions(rootsFile)
	if err != nil {
		return nil, nil, err
	}
	var g *guarded.Browser
	if rt != nil {
		g, err = guarded.LaunchOn(ctx, rt, pol, popts, opts...)
	} else {
		g, err = guarded.LaunchWith(ctx, pol, popts, opts...)
	}
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}

// logLaunchErrors wraps launch so that, when debug is on, a failed launch's full error (command
// line, browser logs) goes to stderr; the run's reason stays coordinator.LaunchReason's.
func logLaunchErrors(e *env, debug bool, launch coordinator.Launcher) coordinator.Launcher {
	return func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		b, closer, err := launch(ctx, pol)
		if err != nil && debug {
			fmt.Fprintf(e.stderr, "debug: browser launch: %v\n", err)
		}
		return b, closer, err
	}
}

// launchOn is launchBridge with the Chromium started by rt, a driver that stays up across runs
// (serve's warm pool): the browser, its profile and the proxy are still the run's own.
func launchOn(ctx context.Context, rt *bridge.Runtime, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	return launchGuarded(ctx, rt, os.Getenv(EnvUpstreamRoots), pol)
}

// proxyOptions are the egress proxy's options: the authorities of file (EnvUpstreamRoots), if any.
func proxyOptions(file string) ([]proxy.Option, error) {
	if file == "" {
		return nil, nil
	}
	roots, err := readRoots(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvUpstreamRoots, err)
	}
	return []proxy.Option{proxy.WithUpstreamRoots(roots...)}, nil
}

// readRoots reads the certificates of a PEM file; a file without one is an error.
func readRoots(file string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return out, nil
}

// The run's browser supports serve's sign-in takeover.
var _ web.TakeoverBrowser = (*guarded.Browser)(nil)
