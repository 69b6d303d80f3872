package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/browser-agent/browser-agent/audit"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/policy"
)

// Interface guards: the fakes are browsers.
var (
	_ coordinator.Browser = (*browsertest.HTTP)(nil)
	_ coordinator.Browser = (*browsertest.Pages)(nil)
)

// demo is the demo site and its embedded policy.
type demo struct {
	srv *demosite.Server
	pol *policy.Policy
}

func startDemo(t *testing.T) demo {
	t.Helper()
	srv, err := demosite.Start(context.Background(), "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: 500})
	if err != nil {
		t.Fatalf("demosite.Start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return demo{srv: srv, pol: demoPolicy(t, srv.URL)}
}

// demoPolicy is the demo site's policy for a site at origin.
func demoPolicy(t testing.TB, origin string) *policy.Policy {
	t.Helper()
	pol, err := policy.Parse(demosite.PolicyYAML(origin), "demo policy")
	if err != nil {
		t.Fatalf("policy.Parse: %v", err)
	}
	return pol
}

func (d demo) url(path string) string { return d.srv.URL + path }

// testEpoch is the fake clock's start.
var testEpoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// stepClock is a clock that moves one second per call.
func stepClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return testEpoch.Add(time.Duration(n) * time.Second)
	}
}

// fakeRecorder is an in-memory Recorder.
type fakeRecorder struct {
	mu       sync.Mutex
	runs     map[string]audit.Run
	steps    []audit.Step
	begins   int
	finishes int
	failOn   string // "begin", "step" or "finish"
}

func newRecorder() *fakeRecorder { return &fakeRecorder{runs: map[string]audit.Run{}} }

// refuse is the error op meets: disk full where the recorder is told to fail, or no run where id
// names no run begun (a begin names none). f.mu is held.
func (f *fakeRecorder) refuse(op, id string) error {
	if f.failOn == op {
		return fmt.Errorf("disk full")
	}
	if _, ok := f.runs[id]; op != "begin" && !ok {
		return fmt.Errorf("no run %s", id)
	}
	return nil
}

func (f *fakeRecorder) BeginRun(ctx context.Context, r audit.Run) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse("begin", ""); err != nil {
		return "", err
	}
	f.begins++
	id := fmt.Sprintf("run%d", f.begins)
	r.ID = id
	f.runs[id] = r
	return id, nil
}

func (f *fakeRecorder) AddStep(ctx context.Context, s audit.Step) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse("step", s.RunID); err != nil {
		return err
	}
	f.steps = append(f.steps, s)
	return nil
}

func (f *fakeRecorder) FinishRun(ctx context.Context, r audit.Run) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse("finish", r.ID); err != nil {
		return err
	}
	f.finishes++
	f.runs[r.ID] = r
	return nil
}

// script builds a script model from steps.
func script(steps ...coordinator.ScriptStep) coordinator.Model {
	return coordinator.ScriptModel("script:test", coordinator.Script{Steps: steps})
}

func call(name, args string) coordinator.ScriptStep {
	return coordinator.ScriptStep{Call: name, Args: json.RawMessage(args)}
}

func open(u string) coordinator.ScriptStep {
	b, _ := json.Marshal(map[string]string{"url": u})
	return call(coordinator.ToolOpenURL, string(b))
}

func extract() coordinator.ScriptStep { return call(coordinator.ToolExtractFields, `{}`) }

func finalJSON(v any) coordinator.ScriptStep {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return coordinator.ScriptStep{Final: b}
}

func answer(id string, fields map[string]string, sources ...string) coordinator.ScriptStep {
	return finalJSON(map[string]any{"record_id": id, "fields": fields, "sources": sources})
}

func cannotAnswer(why string) coordinator.ScriptStep {
	return finalJSON(map[string]string{"cannot_answer": why})
}

func text(s string) coordinator.ScriptStep { return coordinator.ScriptStep{Text: &s} }

// recordingModel wraps a model and keeps the messages of its last call.
type recordingModel struct {
	coordinator.Model
	mu    sync.Mutex
	calls int
	last  []coordinator.Message
	reply []coordinator.Message
}

func (m *recordingModel) Next(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
	m.mu.Lock()
	m.calls++
	m.last = slices.Clone(msgs)
	m.mu.Unlock()
	t, err := m.Model.Next(ctx, msgs, tools)
	m.mu.Lock()
	m.reply = append(m.reply, t.Message)
	m.mu.Unlock()
	return t, err
}

// recordFields are a demo record's labelled fields as the record page shows them.
func recordFields(r demosite.Record) map[string]string {
	return map[string]string{
		"Record ID": r.ID, "Name": r.Name, "Status": r.Status, "Region": r.Region, "Owner": r.Owner, "Updated": r.Updated,
	}
}

// toolMessages returns the tool messages of a conversation.
func toolMessages(msgs []coordinator.Message) []coordinator.Message {
	var out []coordinator.Message
	for _, m := range msgs {
		if m.Role == coordinator.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// decodeLines decodes a JSON-lines transcript.
func decodeLines(t *testing.T, b []byte) []coordinator.Message {
	t.Helper()
	var out []coordinator.Message
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m coordinator.Message
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("transcript line %d: %v: %s", i+1, err, line)
		}
		out = append(out, m)
	}
	return out
}

// mustNotContain fails when any of secrets occurs in any of the texts.
func mustNotContain(t *testing.T, where string, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s contains the secret %q", where, s)
		}
	}
}

// stepReasons lists "tool verdict reason" per step.
func stepReasons(steps []coordinator.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s %s %s", s.Tool, s.Verdict, s.Reason))
	}
	return out
}
