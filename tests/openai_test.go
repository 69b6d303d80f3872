package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
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

type oaMessage struct {
	Role       string       `json:"role"`
	Content    any          `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

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
		var req struct {
			Model    string      `json:"model"`
			Messages []oaMessage `json:"messages"`
			Tools    []any       `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.Tools) != 5 {
			http.Error(w, fmt.Sprintf(`{"error":{"message":"want 5 tools, got %d"}}`, len(req.Tools)), http.StatusBadRequest)
			return
		}
		var msgs []coordinator.Message
		for _, m := range req.Messages {
			cm := coordinator.Message{Role: m.Role, ToolCallID: m.ToolCallID}
			if s, ok := m.Content.(string); ok {
				cm.Content = s
			}
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, coordinator.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			}
			msgs = append(msgs, cm)
		}
		turn, err := offline.New().Next(context.Background(), msgs, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out := map[string]any{"role": "assistant", "content": turn.Message.Content}
		finish := "stop"
		if len(turn.Message.ToolCalls) > 0 {
			var calls []map[string]any
			for _, tc := range turn.Message.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": string(tc.Args)}})
			}
			out["tool_calls"] = calls
			out["content"] = nil
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": 1764480000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": out, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
		})
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
