package coordinator_test

import (
	"context"
	"testing"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// egressBrowser is a browser that reports, after each Open, the requests decided beneath it.
type egressBrowser struct {
	coordinator.Browser
	pending []coordinator.NetDecision
}

func (b *egressBrowser) Open(ctx context.Context, url string) (p bridge.Page, err error) {
	p, err = b.Browser.Open(ctx, url)
	b.pending = append(b.pending,
		coordinator.NetDecision{Method: "GET", URL: url, Verdict: policy.Allow, Reason: policy.ReasonAllowed, Layer: coordinator.LayerBrowser},
		coordinator.NetDecision{Method: "GET", URL: "http://canary.invalid/x", Verdict: policy.Deny, Reason: policy.ReasonHost, Layer: coordinator.LayerProxy},
	)
	return p, err
}

func (b *egressBrowser) TakeDecisions() []coordinator.NetDecision {
	out := b.pending
	b.pending = nil
	return out
}

// TestEgressDecisionsRecorded checks that the requests decided beneath a tool call reach the
// recorder under that step's number, with their layer, and nowhere else.
func TestEgressDecisionsRecorded(t *testing.T) {
	d := startDemo(t)
	rec := newRecorder()
	c := coordinator.New(d.pol, coordinator.WithRecorder(rec))
	b := &egressBrowser{Browser: browsertest.NewHTTP(d.pol)}
	res := c.Run(context.Background(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: coordinator.Offline(), Browser: b})
	if res.Status != coordinator.StatusAnswered {
		t.Fatalf("status: got %s (%s), want answered", res.Status, res.Reason)
	}
	opens := map[int]bool{}
	for _, s := range res.Steps {
		if s.Tool == coordinator.ToolOpenURL || s.Tool == coordinator.ToolSearchSite {
			opens[s.N] = true
		}
		if s.Tool == coordinator.ToolRequest {
			t.Errorf("step %d: a request decision reached the result's steps", s.N)
		}
	}
	var proxyDenials, browserAllows int
	for _, s := range rec.steps {
		if s.Tool != coordinator.ToolRequest {
			continue
		}
		if !opens[s.N] {
			t.Errorf("request decision recorded under step %d, which opened nothing", s.N)
		}
		switch {
		case s.Layer == coordinator.LayerProxy && s.Verdict == "deny" && s.Reason == policy.ReasonHost:
			proxyDenials++
		case s.Layer == coordinator.LayerBrowser && s.Verdict == "allow":
			browserAllows++
		default:
			t.Errorf("unexpected request record %+v", s)
		}
	}
	if proxyDenials != len(opens) || browserAllows != len(opens) {
		t.Errorf("request records: got %d proxy denials and %d browser allows, want %d of each", proxyDenials, browserAllows, len(opens))
	}
}
