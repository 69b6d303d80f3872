package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
)

// TestSignInHook: with WithSignIn a credential page waits for the hook instead of ending the run.
// When a person signed in, the model's next tool result says a person acted (counts only) and the
// run goes on; a second credential page ends it. When nobody took over, it ends as without the
// hook. Nothing of the page reaches the model either way.
func TestSignInHook(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	const secret = "pw-SECRET-4471"
	pol := demoPolicy(t, origin)
	rec := origin + "/records/SYN-0013"
	for _, tc := range []struct {
		name      string
		ok        bool
		wantCalls int // model turns
	}{
		{"a person signed in", true, 2},
		{"nobody took over", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := browsertest.NewPages(map[string]browsertest.Page{
				rec: {Err: fmt.Errorf("password=%s: %w", secret, browse.ErrCredentialRequired)},
			})
			asked := 0
			hook := func(ctx context.Context, url string) (coordinator.Takeover, bool) {
				asked++
				return coordinator.Takeover{Duration: 12 * time.Second, Clicks: 3, Keys: 14, Submits: 1}, tc.ok
			}
			model := &recordingModel{Model: script(open(rec), open(rec), cannotAnswer("x"))}
			c := coordinator.New(pol, coordinator.WithSignIn(hook))
			res := c.Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0013", Model: model, Browser: b})
			if res.Status != coordinator.StatusHuman {
				t.Fatalf("status %s (%s), want human_action_required", res.Status, res.Reason)
			}
			if asked != 1 {
				t.Errorf("hook asked %d times, want once", asked)
			}
			if model.calls != tc.wantCalls {
				t.Errorf("model turns %d, want %d", model.calls, tc.wantCalls)
			}
			all := fmt.Sprintf("%+v %+v", model.last, res)
			mustNotContain(t, "model and result", all, secret)
			if tc.ok {
				last := model.last[len(model.last)-1]
				if !strings.Contains(last.Content, coordinator.ReasonPersonActed) {
					t.Errorf("tool result after the takeover: %q, want it to say a person acted", last.Content)
				}
				if s := res.Steps[0]; !strings.HasSuffix(s.Reason, "3 clicks, 14 keys, 1 sign-in submission") {
					t.Errorf("takeover step %+v, want the counts", s)
				}
			}
		})
	}
}
