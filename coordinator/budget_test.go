package coordinator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// budgetBrowser is a browser whose run budget is spent on the first Open, as the bridge reports
// it.
type budgetBrowser struct {
	coordinator.Browser
	err *browse.BudgetError
}

func (b budgetBrowser) Open(ctx context.Context, url string) (browse.Page, error) {
	return browse.Page{URL: url, Status: 200}, fmt.Errorf("open %s: %w", url, b.err)
}

// TestBudgetEndsRun: a spent run budget ends the run blocked at that step, naming the budget and
// the layer that counted it, even when the model would go on (a script model that keeps opening).
func TestBudgetEndsRun(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	tests := []struct {
		name       string
		err        *browse.BudgetError
		wantReason string
		wantLayer  string
	}{
		{"run bytes in the browser", &browse.BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: 128 << 20},
			"budget: run bytes spent (limits.max_run_bytes 134217728)", policy.LayerBrowser},
		{"run bytes at the proxy", &browse.BudgetError{Reason: policy.ReasonBudgetRunBytes, Limit: 1 << 20, Proxy: true},
			"budget: run bytes spent at the egress proxy (limits.max_run_bytes 1048576)", policy.LayerProxy},
		{"page requests", &browse.BudgetError{Reason: policy.ReasonBudgetPageRequests, Limit: 500},
			"budget: page requests spent (limits.max_page_requests 500)", policy.LayerBrowser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := coordinator.ParseScript([]byte(`{"steps": [
				{"call": "open_url", "args": {"url": "`+origin+`/records/SYN-0042"}},
				{"call": "open_url", "args": {"url": "`+origin+`/records/SYN-0043"}},
				{"call": "extract_fields", "args": {}}
			]}`), "budget")
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			b := budgetBrowser{Browser: browsertest.NewPages(nil), err: tt.err}
			res := coordinator.New(pol, coordinator.WithRecorder(rec)).Run(context.Background(),
				coordinator.RunArgs{Task: "Look up SYN-0042", Model: coordinator.ScriptModel("budget", script), Browser: b})
			if res.Status != coordinator.StatusBlocked || res.Reason != tt.wantReason {
				t.Errorf("result:\n\tgot  %s: %s\n\twant blocked: %s", res.Status, res.Reason, tt.wantReason)
			}
			if len(res.Steps) != 1 {
				t.Fatalf("steps: got %d (%+v), want 1: the run ends at the open that spent the budget", len(res.Steps), res.Steps)
			}
			s := res.Steps[0]
			if s.Verdict != policy.Deny || s.Reason != tt.err.Reason || s.Layer != tt.wantLayer || s.Rule != tt.err.Rule() {
				t.Errorf("step:\n\tgot  %+v\n\twant deny, reason %q, layer %s, rule %q", s, tt.err.Reason, tt.wantLayer, tt.err.Rule())
			}
		})
	}
}
