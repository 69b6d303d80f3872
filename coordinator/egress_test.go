package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// plantingBrowser is a browser that reports, after each Open, the requests plant says were
// decided beneath it.
type plantingBrowser struct {
	coordinator.Browser
	plant   func(url string) []policy.Entry
	pending []policy.Entry
}

func (b *plantingBrowser) Open(ctx context.Context, url string) (p browse.Page, err error) {
	p, err = b.Browser.Open(ctx, url)
	b.pending = append(b.pending, b.plant(url)...)
	return p, err
}

func (b *plantingBrowser) TakeDecisions() []policy.Entry {
	out := b.pending
	b.pending = nil
	return out
}

// runPlanted runs the offline planner's lookup of SYN-0042 on the demo through a plantingBrowser
// and wants it answered; plant is given the demo's origin and each URL opened.
func runPlanted(t *testing.T, plant func(origin, url string) []policy.Entry) (demo, coordinator.Result, *fakeRecorder) {
	t.Helper()
	d := startDemo(t)
	rec := newRecorder()
	c := coordinator.New(d.pol, coordinator.WithRecorder(rec))
	b := &plantingBrowser{Browser: browsertest.NewHTTP(d.pol), plant: func(url string) []policy.Entry { return plant(d.srv.URL, url) }}
	res := c.Run(context.Background(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: offline.New(), Browser: b})
	if res.Status != coordinator.StatusAnswered {
		t.Fatalf("status: got %s (%s), want answered", res.Status, res.Reason)
	}
	return d, res, rec
}

// TestEgressDecisionsRecorded checks that the requests decided beneath a tool call reach the
// recorder under that step's number, with their layer, and nowhere else.
func TestEgressDecisionsRecorded(t *testing.T) {
	_, res, rec := runPlanted(t, func(_, url string) []policy.Entry {
		return []policy.Entry{
			{Method: "GET", Origin: url, Verdict: policy.Allow, Reason: policy.ReasonAllowed, Layer: policy.LayerBrowser},
			{Method: "GET", Origin: "http://canary.invalid/x", Verdict: policy.Deny, Reason: policy.ReasonHost, Layer: policy.LayerProxy},
		}
	})
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
		case s.Layer == policy.LayerProxy && s.Verdict == policy.Deny && s.Reason == policy.ReasonHost:
			proxyDenials++
		case s.Layer == policy.LayerBrowser && s.Verdict == policy.Allow:
			browserAllows++
		default:
			t.Errorf("unexpected request record %+v", s)
		}
	}
	if proxyDenials != len(opens) || browserAllows != len(opens) {
		t.Errorf("request records: got %d proxy denials and %d browser allows, want %d of each", proxyDenials, browserAllows, len(opens))
	}
}

const plantedSecret = "ZQXplanted4410"

// plantSecret gives, for each Open, requests a page chose with plantedSecret in every part of the
// URL and in the method, from both layers, allowed and denied.
func plantSecret(origin, _ string) []policy.Entry {
	var out []policy.Entry
	for _, layer := range []string{policy.LayerBrowser, policy.LayerProxy} {
		out = append(out,
			policy.Entry{Method: "GET", Origin: origin + "/sources/b/" + plantedSecret + "?s=" + plantedSecret + "#" + plantedSecret, Verdict: policy.Allow, Rule: "x read /sources/b/{id}", Reason: policy.ReasonAllowed, Layer: layer},
			policy.Entry{Method: plantedSecret, Origin: origin + "/" + plantedSecret, Verdict: policy.Deny, Rule: "method " + plantedSecret, Reason: policy.ReasonWriteMethod, Layer: layer},
			policy.Entry{Method: "GET", Origin: "http://" + plantedSecret + ".evil.example/" + plantedSecret, Verdict: policy.Deny, Reason: policy.ReasonHost, Layer: layer},
		)
	}
	return out
}

// TestAuditKeepsNoChosenString checks the audit promise at the point where decisions become rows:
// a secret a page put in a request's path, query, fragment, host or method reaches neither the
// recorder nor the result, while the record's own path stays readable.
func TestAuditKeepsNoChosenString(t *testing.T) {
	d, res, rec := runPlanted(t, plantSecret)
	requests, recordPath := 0, false
	for _, s := range rec.steps {
		all := strings.Join([]string{s.Tool, s.URL, s.Rule, s.Reason, s.Layer, s.Verdict.String(), s.Origin, s.Path}, " ")
		if strings.Contains(strings.ToLower(all), strings.ToLower(plantedSecret)) {
			t.Errorf("step %d recorded a planted string: %+v", s.N, s)
		}
		if s.Tool == coordinator.ToolRequest {
			requests++
		}
		if s.Origin+s.Path == d.url("/records/SYN-0042") {
			recordPath = true
		}
	}
	if requests == 0 || !recordPath {
		t.Fatalf("recorded %d request decisions, record path kept %t: the test saw nothing", requests, recordPath)
	}
	for _, s := range res.Steps {
		if strings.Contains(s.URL+s.Rule+s.Reason, plantedSecret) {
			t.Errorf("result step %d holds a planted string: %+v", s.N, s)
		}
	}
}

// TestAuditKeepsNoModelString: a model that writes a string of its choosing into a tool name, an
// argument name, a claimed field and a cited source gets it into no audit row (the run's reason
// included), though the model itself is told what was wrong.
func TestAuditKeepsNoModelString(t *testing.T) {
	d := startDemo(t)
	rec := newRecorder()
	c := coordinator.New(d.pol, coordinator.WithRecorder(rec))
	const s = "ZQXmodel4410"
	model := script(
		call(s, `{}`),
		call("open_url", `{"`+s+`":1}`),
		open(d.url("/records/SYN-0042")), extract(),
		answer("SYN-0042", map[string]string{s: "x"}, d.url("/records/"+s)),
	)
	res := c.Run(context.Background(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: browsertest.NewHTTP(d.pol)})
	if res.Status != coordinator.StatusBlocked {
		t.Fatalf("status %s (%s), want blocked", res.Status, res.Reason)
	}
	if len(rec.steps) < 4 {
		t.Fatalf("recorded %d steps: the test saw nothing", len(rec.steps))
	}
	for _, st := range rec.steps {
		if strings.Contains(fmt.Sprintf("%+v", st), s) {
			t.Errorf("recorded step holds the model's string: %+v", st)
		}
	}
	for _, r := range rec.runs {
		if strings.Contains(r.Reason, s) {
			t.Errorf("recorded run reason holds the model's string: %s", r.Reason)
		}
	}
}
