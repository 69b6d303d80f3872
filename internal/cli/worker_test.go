package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// TestQueueCommandsUsage: bad flags of worker and queue-ui (and the queue's flags serve shares with
// worker) are usage errors naming the flag, and
// River UI is refused beyond loopback.
func TestQueueCommandsUsage(t *testing.T) {
	// A check that lets a bad flag through starts the command: never on the user's default store.
	t.Setenv("BROWSER_AGENT_DB", filepath.Join(t.TempDir(), "audit.db"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"worker", "--run-timeout", "10ms"}, "--run-timeout must be at least 1s"},
		{[]string{"worker", "--drain", "-1s"}, "--drain must not be negative"},
		{[]string{"serve", "--run-timeout", "10ms"}, "--run-timeout must be at least 1s"},
		{[]string{"serve", "--drain", "-1s"}, "--drain must not be negative"},
		{[]string{"worker", "extra"}, `unexpected argument "extra"`},
		{[]string{"queue-ui", "--addr", "0.0.0.0:8091"}, "give a loopback address"},
		{[]string{"queue-ui", "--addr", "192.168.1.2:8091"}, "give a loopback address"},
		{[]string{"serve", "--workers", "-2"}, "--workers must not be negative"},
	} {
		var stdout, stderr testutil.Buffer
		code := Main(c.args, strings.NewReader(""), &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
}
