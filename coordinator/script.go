package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ScriptStep is one scripted model turn: a tool call, a final answer object, or raw final text.
type ScriptStep struct {
	Call  string          `json:"call,omitempty"`  // a tool name (any name: the script may be hostile)
	Args  json.RawMessage `json:"args,omitempty"`  // the call's arguments, passed on exactly
	Final json.RawMessage `json:"final,omitempty"` // a final message, sent as its compact JSON
	Text  *string         `json:"text,omitempty"`  // a final message sent as this exact text
}

// Script is the file format of the script model: {"steps": [...]}.
type Script struct {
	Steps []ScriptStep `json:"steps"`
}

// ScriptError is a script that cannot be used. It names the file and the step.
type ScriptError struct {
	File string
	Step int // 1-based; 0 when not about one step
	Err  error
}

func (e *ScriptError) Error() string {
	if e.Step > 0 {
		return fmt.Sprintf("script %s: step %d: %v", e.File, e.Step, e.Err)
	}
	return fmt.Sprintf("script %s: %v", e.File, e.Err)
}

func (e *ScriptError) Unwrap() error { return e.Err }

// ParseScript parses and checks a script; name is used in errors. Unknown keys are refused.
func ParseScript(data []byte, name string) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, &ScriptError{File: name, Err: err}
	}
	if dec.More() {
		return Script{}, &ScriptError{File: name, Err: errors.New("more than one JSON value")}
	}
	if len(s.Steps) == 0 {
		return Script{}, &ScriptError{File: name, Err: errors.New(`no steps; write {"steps": [{"call": "open_url", "args": {"url": "..."}}, {"final": {...}}]}`)}
	}
	for i, st := range s.Steps {
		n := 0
		if st.Call != "" {
			n++
		}
		if len(st.Final) > 0 {
			n++
			var b bytes.Buffer
			if err := json.Compact(&b, st.Final); err != nil {
				return Script{}, &ScriptError{File: name, Step: i + 1, Err: err}
			}
		}
		if st.Text != nil {
			n++
		}
		if n != 1 {
			return Script{}, &ScriptError{File: name, Step: i + 1, Err: errors.New(`give exactly one of "call", "final" or "text"`)}
		}
		if st.Call == "" && len(st.Args) > 0 {
			return Script{}, &ScriptError{File: name, Step: i + 1, Err: errors.New(`"args" needs "call"`)}
		}
	}
	return s, nil
}

// LoadScript reads a script file and returns the script model for it.
func LoadScript(path string) (Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ScriptError{File: path, Err: err}
	}
	s, err := ParseScript(data, path)
	if err != nil {
		return nil, err
	}
	return ScriptModel("script:"+path, s), nil
}

// ScriptModel returns a model that plays the script, one step per turn, whatever it is told. Its
// n-th turn is the n-th step, n counted from the assistant messages in the conversation, so it
// keeps no state. Every turn is marked simulated. It stands in for a compromised model in tests.
func ScriptModel(name string, s Script) Model {
	steps := append([]ScriptStep(nil), s.Steps...)
	return ModelFunc{ModelName: name, F: func(ctx context.Context, msgs []Message, _ []ToolSpec) (Turn, error) {
		if err := ctx.Err(); err != nil {
			return Turn{}, err
		}
		n := countAssistant(msgs)
		if n >= len(steps) {
			return Turn{}, fmt.Errorf("script %s ran out after %d steps", strings.TrimPrefix(name, "script:"), len(steps))
		}
		return scriptTurn(steps[n], n+1), nil
	}}
}

func countAssistant(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			n++
		}
	}
	return n
}

func scriptTurn(st ScriptStep, n int) Turn {
	msg := Message{Role: RoleAssistant}
	switch {
	case st.Call != "":
		args := st.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		msg.ToolCalls = []ToolCall{{ID: fmt.Sprintf("script_%d", n), Name: st.Call, Args: append(json.RawMessage(nil), args...)}}
	case st.Text != nil:
		msg.Content = *st.Text
	default:
		var b bytes.Buffer
		json.Compact(&b, st.Final)
		msg.Content = b.String()
	}
	return Turn{Message: msg, Simulated: true}
}

// Simulate wraps model so that its first len(steps) turns are the scripted steps, marked simulated,
// and the model itself plays every turn after them. The simulated presets use it: a real model
// refuses a write or an off-site visit, so one scripted call is substituted to show the policy
// denying it. The wrapper keeps no state: it counts the assistant messages it is given.
func Simulate(model Model, steps []ScriptStep) Model {
	steps = append([]ScriptStep(nil), steps...)
	return ModelFunc{ModelName: model.Name(), F: func(ctx context.Context, msgs []Message, tools []ToolSpec) (Turn, error) {
		if n := countAssistant(msgs); n < len(steps) {
			if err := ctx.Err(); err != nil {
				return Turn{}, err
			}
			return scriptTurn(steps[n], n+1), nil
		}
		return model.Next(ctx, msgs, tools)
	}}
}
