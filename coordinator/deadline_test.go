package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
)

// slowModel takes 40 s a turn and opens the home page, until its context is done.
func slowModel(origin string) coordinator.Model {
	return coordinator.ModelFunc{ModelName: "slow", F: func(ctx context.Context, msgs []coordinator.Message, _ []coordinator.ToolSpec) (coordinator.Turn, error) {
		select {
		case <-time.After(40 * time.Second):
			return coordinator.Turn{Message: coordinator.Message{ToolCalls: []coordinator.ToolCall{{ID: "c", Name: "open_url", Args: json.RawMessage(`{"url":"` + origin + `/"}`)}}}}, nil
		case <-ctx.Done():
			return coordinator.Turn{}, ctx.Err()
		}
	}}
}

// TestDeadline: a run past its deadline ends blocked, at the deadline; a canceled run is an error.
func TestDeadline(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	synctest.Test(t, func(t *testing.T) {
		b := browsertest.NewPages(map[string]browsertest.Page{origin + "/": {Text: "home"}})
		start := time.Now()
		res := coordinator.New(pol, coordinator.WithDeadline(time.Minute)).Run(t.Context(),
			coordinator.RunArgs{Task: "Look up SYN-0042", Model: slowModel(origin), Browser: b})
		if res.Status != coordinator.StatusBlocked || res.Reason != "run deadline (1m0s) exceeded" {
			t.Errorf("got %s: %s, want blocked: run deadline (1m0s) exceeded", res.Status, res.Reason)
		}
		if got := time.Since(start); got != time.Minute {
			t.Errorf("the run took %v, want exactly the deadline", got)
		}
		if got := len(b.Opened()); got != 1 {
			t.Errorf("opens: got %d, want 1 (one turn fits in the deadline)", got)
		}
		if !res.EndedAt.Equal(start.Add(time.Minute).UTC()) {
			t.Errorf("ended at %v, want %v", res.EndedAt, start.Add(time.Minute))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Second, cancel)
		res := coordinator.New(pol).Run(ctx, coordinator.RunArgs{Task: "Look up SYN-0042", Model: slowModel(origin), Browser: browsertest.NewPages(nil)})
		if res.Status != coordinator.StatusError || res.Reason != "run canceled" {
			t.Errorf("got %s: %s, want error: run canceled", res.Status, res.Reason)
		}
	})
}

// TestCallerDeadline: a run whose caller's deadline comes before its own ends blocked at the
// caller's, and says it was the caller's (CI read "run deadline (5m0s) exceeded" of a run the test
// gave 150 s).
func TestCallerDeadline(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		start := time.Now()
		res := coordinator.New(pol, coordinator.WithDeadline(5*time.Minute)).Run(ctx,
			coordinator.RunArgs{Task: "Look up SYN-0042", Model: slowModel(origin), Browser: browsertest.NewPages(map[string]browsertest.Page{origin + "/": {Text: "home"}})})
		if want := "run deadline (1m30s, the caller's) exceeded"; res.Status != coordinator.StatusBlocked || res.Reason != want {
			t.Errorf("got %s: %s, want blocked: %s", res.Status, res.Reason, want)
		}
		if got := time.Since(start); got != 90*time.Second {
			t.Errorf("the run took %v, want the caller's 90 s", got)
		}
	})
}
