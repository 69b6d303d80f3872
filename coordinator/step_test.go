package coordinator_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/policy"
)

func answerStep(verdict policy.Verdict, reason string) coordinator.Step {
	return coordinator.Step{Step: audit.Step{Tool: coordinator.ToolAnswer, Entry: policy.Entry{Rule: coordinator.RuleAnswer, Verdict: verdict, Reason: reason}}}
}

func TestStepOutcome(t *testing.T) {
	tests := []struct {
		name string
		step coordinator.Step
		want coordinator.Status
	}{
		{"answer allowed", answerStep(policy.Allow, "evidence backs every value"), coordinator.StatusAnswered},
		{"sources conflict", answerStep(policy.Deny, "sources conflict on Status"), coordinator.StatusUncertain},
		{"answer not backed", answerStep(policy.Deny, "value of Status not in the evidence"), coordinator.StatusBlocked},
		{"model could not answer", answerStep(policy.Deny, "model could not answer"), coordinator.StatusBlocked},
		{"a policy denial is not an outcome", coordinator.Step{Step: audit.Step{Tool: "open_url", Entry: policy.Entry{Rule: "no rule matched", Verdict: policy.Deny, Reason: "sources conflict on Status"}}}, ""},
		{"an allowed read is not an outcome", coordinator.Step{Step: audit.Step{Tool: "read_page", Entry: policy.Entry{Verdict: policy.Allow}}}, ""},
	}
	for _, tt := range tests {
		if got := tt.step.Outcome(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestStepJSON: a step's JSON is the view the page (web/static/app.js), the side panel, recorded
// runs and "run --json" read, key for key; it keeps no run ID, byte count or full duration, and
// reads back as it was, to the millisecond.
func TestStepJSON(t *testing.T) {
	s := coordinator.Step{Step: audit.Step{
		RunID: "feedface", Tool: coordinator.ToolOpenURL, URL: "http://h/records/SYN-0042", Duration: 1500*time.Millisecond + 7,
		BytesReturned: 99, Entry: policy.Entry{N: 2, Origin: "http://h", Path: "/records/SYN-0042", Verdict: policy.Allow, Rule: "read", Reason: "allowed read route", Layer: policy.LayerPolicy},
	}, Simulated: true}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":2,"origin":"http://h","path":"/records/SYN-0042","verdict":"allow","rule":"read","reason":"allowed read route","layer":"policy","tool":"open_url","url":"http://h/records/SYN-0042","duration_ms":1500,"simulated":true}`
	if string(b) != want {
		t.Errorf("JSON:\n\tgot  %s\n\twant %s", b, want)
	}
	var back coordinator.Step
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s.RunID, s.BytesReturned, s.Duration = "", 0, 1500*time.Millisecond
	if back != s {
		t.Errorf("read back:\n\tgot  %+v\n\twant %+v", back, s)
	}
	a, _ := json.Marshal(answerStep(policy.Deny, "sources conflict on Status"))
	if want := `{"n":0,"origin":"","path":"","verdict":"deny","rule":"answer check","reason":"sources conflict on Status","layer":"","tool":"answer","duration_ms":0,"outcome":"uncertain"}`; string(a) != want {
		t.Errorf("answer JSON:\n\tgot  %s\n\twant %s", a, want)
	}
}
