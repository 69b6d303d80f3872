// Package testutil holds the helpers that the tests of several packages share.
package testutil

import "time"

// PollInterval is how often Eventually checks its condition.
const PollInterval = 20 * time.Millisecond

// Eventually checks cond every PollInterval until it reports true or d has passed, and returns
// its last result. Tests use it to wait for what a browser or a server does in its own time,
// instead of sleeping a fixed time that a loaded machine may overrun.
func Eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(PollInterval) {
		if cond() {
			return true
		}
	}
	return cond()
}
