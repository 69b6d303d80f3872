// Package chattest is the wire side of a fake OpenAI-compatible Chat Completions server, for the
// tests that give the real binary a "model" on loopback: the request read back into the
// coordinator's messages, and a turn written as the completion the adapter reads.
package chattest

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/browser-agent/browser-agent/coordinator"
)

// Request is a Chat Completions request as the fake server read it.
type Request struct {
	Model    string
	Messages []coordinator.Message
	Tools    []json.RawMessage
}

// ReadRequest decodes a Chat Completions request body into the coordinator's messages: each
// message's role, text content, tool call id and tool calls.
func ReadRequest(r io.Reader) (Request, error) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return Request{}, err
	}
	out := Request{Model: req.Model, Tools: req.Tools}
	for _, m := range req.Messages {
		cm := coordinator.Message{Role: m.Role, ToolCallID: m.ToolCallID}
		if s, ok := m.Content.(string); ok {
			cm.Content = s
		}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, coordinator.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
		}
		out.Messages = append(out.Messages, cm)
	}
	return out, nil
}

// WriteTurn answers with turn as a chat.completion of model, with id and a fixed usage (1000
// prompt tokens, 50 completion tokens): tool calls (finish_reason tool_calls, no content) when the
// turn makes any, else its content (stop).
func WriteTurn(w http.ResponseWriter, id, model string, turn coordinator.Turn) {
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
		"id": id, "object": "chat.completion", "created": 1764480000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": out, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
	})
}
