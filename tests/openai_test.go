package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/browser-agent/browser-agent/coordinator/offline"
	"github.com/browser-agent/browser-agent/internal/testkit/chattest"
)

// fakeOpenAI is an OpenAI-compatible Chat Completions server whose "model" is the offline planner:
// it turns the request's messages back into the coordinator's, asks the planner for the next turn
// and answers in the OpenAI wire format. So the whole adapter (messages, tool calls, tool results,
// usage) is exercised on every preset, against a model that behaves deterministically.
type fakeOpenAI struct {
	*httptest.Server
	requests atomic.Int64
	badAuth  atomic.Int64
}

const fakeKey = "sk-test-fake-key-0d9e"

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+fakeKey {
			f.badAuth.Add(1)
			http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		req, err := chattest.ReadRequest(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.Tools) != 5 {
			http.Error(w, fmt.Sprintf(`{"error":{"message":"want 5 tools, got %d"}}`, len(req.Tools)), http.StatusBadRequest)
			return
		}
		turn, err := offline.New().Next(context.Background(), req.Messages, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		chattest.WriteTurn(w, "chatcmpl-test", req.Model, turn)
	}))
	t.Cleanup(f.Close)
	return f
}

func TestPresetsThroughOpenAIAdapter(t *testing.T) {
	srv := newFakeOpenAI(t)
	env := []string{"OPENAI_API_KEY=" + fakeKey, "OPENAI_BASE_URL=" + srv.URL + "/v1"}
	tests := []struct {
		preset string
		status string
		// called is whether the model is asked at all: the simulated presets substitute their
		// scripted call for the model's first turn and end at the denial.
		called bool
	}{
		{"lookup", "answered", true},
		{"blocked-write", "blocked", false},
		{"off-site", "blocked", false},
		{"sign-in", "human_action_required", true},
		{"conflicting-sources", "uncertain", true},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			before := srv.requests.Load()
			o := runEnv(t, env, "--preset", tt.preset, "--model", "openai:gpt-4.1-mini")
			if o.res.Status != tt.status {
				t.Fatalf("--preset %s through the OpenAI adapter: got %s (%s), want %s\nstderr:\n%s", tt.preset, o.res.Status, o.res.Reason, tt.status, o.stderr)
			}
			if o.res.Model != "openai:gpt-4.1-mini" {
				t.Errorf("model: got %q", o.res.Model)
			}
			n := srv.requests.Load() - before
			if tt.called && n == 0 || !tt.called && n != 0 {
				t.Errorf("--preset %s: %d requests reached the model server, want called=%v", tt.preset, n, tt.called)
			}
			// The fake server bills 1000 prompt and 50 completion tokens a request.
			if u := o.res.Usage; u.PromptTokens != 1000*int(n) || u.CompletionTokens != 50*int(n) || tt.called && u.CostUSD <= 0 {
				t.Errorf("--preset %s: usage %+v after %d requests", tt.preset, u, n)
			}
			if strings.Contains(o.stdout+o.stderr+readFile(t, o.transcript), fakeKey) {
				t.Errorf("the API key appears in the run's output")
			}
		})
	}
	if srv.badAuth.Load() != 0 {
		t.Errorf("%d requests came without the API key", srv.badAuth.Load())
	}
}

func TestUnapprovedModelSendsNothing(t *testing.T) {
	srv := newFakeOpenAI(t)
	env := []string{"OPENAI_API_KEY=" + fakeKey, "OPENAI_BASE_URL=" + srv.URL + "/v1"}
	o := runEnv(t, env, "--preset", "lookup", "--model", "openai:gpt-9-unapproved")
	if o.res.Status != "rejected" || o.code != 2 {
		t.Errorf("unapproved model: got %s (exit %d), want rejected (exit 2)", o.res.Status, o.code)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("unapproved model: %d requests reached the model server, want 0", n)
	}
}
