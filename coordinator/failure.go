package coordinator

import (
	"errors"
	"github.com/browser-agent/browser-agent/policy"
	"strings"
)

// Short reasons for a failing part. A reason names the part and what to do; the details (command
// lines, browser logs) go to the debug log, never to the result or the audit store.

// ReasonLaunch is the reason of a run whose browser could not be started.
const ReasonLaunch = "Chromium could not start; run scripts/setup, check memory and that Chromium runs on this machine (details on stderr with BROWSER_AGENT_DEBUG=1)"

// Liveness is implemented by browsers that can tell whether their processes still run. Alive
// returns an error naming the part that exited.
type Liveness interface {
	Alive() error
}

// Walled is implemented by browsers that can say whether the operating system walls them in (a
// network namespace whose only way out is the run's egress proxy): "on: ..." or "off: ..." and
// why. The run's audit row records it.
type Walled interface {
	Wall() string
}

// browserGone reports why b can no longer be used, or nil (also when b cannot tell).
func browserGone(b Browser) error {
	if l, ok := b.(Liveness); ok {
		return l.Alive()
	}
	return nil
}

// StartFailure is implemented by start-up errors whose message is one line naming the part, where
// it was looked for and the fix, with no browser log or command line in it (bridge.SetupError).
type StartFailure interface {
	error
	StartReason() string
}

// maxStartReason bounds a StartFailure's reason.
const maxStartReason = 600

// maxLaunchReason bounds a launch error's message kept in a reason.
const maxLaunchReason = 160

// LaunchReason is the reason of a run whose browser could not be started: "browser: " and err when
// it is one short line with no browser log or command line in it, else ReasonLaunch.
//
// An error that says itself, in one line, which part failed, where and what fixes it (a
// StartFailure: the bridge's setup errors) is kept whole, up to maxStartReason.
func LaunchReason(err error) string {
	var sf StartFailure
	if errors.As(err, &sf) {
		return "browser: " + policy.Clip(sf.StartReason(), maxStartReason)
	}
	msg := err.Error()
	low := strings.ToLower(msg)
	if len(msg) > maxLaunchReason || strings.ContainsAny(msg, "\r\n") || strings.Contains(low, "browser logs") || strings.Contains(low, "--") ||
		strings.Contains(low, "/usr/") || strings.Contains(low, "===") || strings.Contains(low, "target closed") ||
		strings.Contains(low, "has been closed") {
		return "browser: " + ReasonLaunch
	}
	return "browser: " + strings.TrimSpace(msg)
}

// ModelFailure is implemented by model errors that can say, in a short line, which part failed and
// what to do (coordinator/openai's *Error).
type ModelFailure interface {
	error
	Reason() string
}

// modelReason is the reason of a run whose model call failed.
func modelReason(err error) string {
	var mf ModelFailure
	if errors.As(err, &mf) {
		return "model server: " + policy.Clip(mf.Reason(), 300)
	}
	return "model error: " + policy.Clip(err.Error(), 300)
}
