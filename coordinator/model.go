package coordinator

import (
	"context"
	"encoding/json"
)

// Role of a message in the conversation with the model.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message given to or returned by a model. It is what the transcript records.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant only
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool only: the call this answers
	Name       string     `json:"name,omitempty"`         // tool only: the tool's name
}

// ToolCall is a model's request to call one tool. Args is the raw JSON object the model produced;
// it is validated strictly by the coordinator before anything happens.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool to the model: a name, a description and a JSON Schema for its arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage is what one model turn, or a run's turns together, cost: the tokens as billed (the usage a
// real model's server reports; for the offline planner, what would be sent, counted by
// PromptTokens and OutputTokens).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// ModelTurns counts the turns summed (the coordinator counts them; a model leaves it 0).
	ModelTurns int     `json:"model_turns"`
	CostUSD    float64 `json:"cost_usd"` // estimated from the adapter's price table; 0 for offline and script
}

// Add sums usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		ModelTurns:       u.ModelTurns + v.ModelTurns,
		CostUSD:          u.CostUSD + v.CostUSD,
	}
}

// Turn is one model reply: either tool calls, or a final text message (the answer JSON).
type Turn struct {
	Message Message // Role is RoleAssistant
	Usage   Usage
	// Simulated is true when the reply was scripted in place of a real model's (the script model,
	// and the two simulated presets). The run is then labelled simulated.
	Simulated bool
}

// Model is anything that can take the conversation so far and produce the next assistant turn.
// Implementations: the offline planner, the script model, and the OpenAI-compatible adapter.
type Model interface {
	// Name is the model's name as it is recorded, e.g. "offline", "script:FILE", "openai:gpt-4.1-mini".
	Name() string
	// Next returns the next assistant turn. msgs is the whole conversation, system prompt first.
	Next(ctx context.Context, msgs []Message, tools []ToolSpec) (Turn, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc struct {
	ModelName string
	F         func(ctx context.Context, msgs []Message, tools []ToolSpec) (Turn, error)
}

func (m ModelFunc) Name() string { return m.ModelName }
func (m ModelFunc) Next(ctx context.Context, msgs []Message, tools []ToolSpec) (Turn, error) {
	return m.F(ctx, msgs, tools)
}
