package cli

import (
	"context"
	"io"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/policy"
)

// launchBridge is the Launcher of "browser-agent run", serve and record: a dedicated Chromium
// behind the run's own egress proxy.
func launchBridge(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	g, err := guarded.Launch(ctx, pol)
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}
