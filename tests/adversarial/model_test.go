package adversarial

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
)

// pacedKey is the API key the guarded run sends to a case's model server.
const pacedKey = "sk-adversarial-paced-5d1c"

// pacedModel is a case's model as a hosted model is: an OpenAI-compatible Chat Completions server
// on loopback that answers each turn after pace (issue 46: 0.8 s), so the page goes on changing
// while a turn is pending. Its "model" is the case's script (coordinator.ScriptModel: the n-th
// turn is the n-th step). It keeps every request as it came, for the planted strings, and when
// each was asked, for the moment a page's change fell in (moment).
type pacedModel struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	asked  []time.Time
}

func startPacedModel(t *testing.T, script string, pace time.Duration) *pacedModel {
	t.Helper()
	s, err := coordinator.ParseScript([]byte(script), "paced model")
	if err != nil {
		t.Fatalf("paced model: %v", err)
	}
	play := coordinator.ScriptModel("script:paced", s)
	m := &pacedModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, string(body))
		m.asked = append(m.asked, time.Now())
		m.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+pacedKey || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not this"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msgs []coordinator.Message
		for _, rm := range req.Messages {
			cm := coordinator.Message{Role: rm.Role, ToolCallID: rm.ToolCallID}
			if s, ok := rm.Content.(string); ok {
				cm.Content = s
			}
			for _, tc := range rm.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, coordinator.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			}
			msgs = append(msgs, cm)
		}
		select {
		case <-time.After(pace):
		case <-r.Context().Done():
			return
		}
		turn, err := play.Next(context.Background(), msgs, nil)
		if err != nil {
			http.Error(w, `{"error":{"message":"the script ran out"}}`, http.StatusBadRequest)
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
			out["tool_calls"], out["content"], finish = calls, nil, "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-paced", "object": "chat.completion", "created": 1764480000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": out, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
		})
	}))
	t.Cleanup(m.Close)
	return m
}

// requests is every request the server was sent, one after another.
func (m *pacedModel) requests() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.bodies, "\n")
}

// moment says when at fell in the run, by the model's turns: turn k is pending from its request
// for pace; the call it asks for runs from then until turn k+1 is asked (turn 1's call is
// open_url).
func (m *pacedModel) moment(at time.Time, pace time.Duration) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := len(m.asked) - 1; k >= 0; k-- {
		switch {
		case at.Before(m.asked[k]):
			continue
		case at.Before(m.asked[k].Add(pace)):
			return "while model turn " + strconv.Itoa(k+1) + " was pending"
		case k == 0:
			return "before open_url returned"
		default:
			return "while the call of turn " + strconv.Itoa(k+1) + " ran (between two chunks)"
		}
	}
	return "before the first model turn"
}

// turnsSince is when each turn was asked, in ms from at.
func (m *pacedModel) turnsSince(at time.Time) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	for _, a := range m.asked {
		out = append(out, a.Sub(at).Milliseconds())
	}
	return out
}
