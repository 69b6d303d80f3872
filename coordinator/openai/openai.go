package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/policy"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Interface guard.
var _ coordinator.Model = (*Model)(nil)

// Defaults.
const (
	DefaultTimeout       = 60 * time.Second // per request attempt
	DefaultMaxRetries    = 2                // on 408, 409, 429, 5xx and connection errors
	DefaultMaxRetryDelay = 30 * time.Second // longest wait between attempts, Retry-After included
)

// maxMessageLen bounds the server's error message kept in an Error.
const maxMessageLen = 500

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Cost is the price of promptTokens in and completionTokens out.
func (p Price) Cost(promptTokens, completionTokens int) float64 {
	return (float64(promptTokens)*p.InputPerMTok + float64(completionTokens)*p.OutputPerMTok) / 1e6
}

// DefaultPrices returns a fresh copy of the built-in price table (OpenAI list prices, standard tier).
func DefaultPrices() map[string]Price {
	return map[string]Price{
		"gpt-4.1":      {InputPerMTok: 2.00, OutputPerMTok: 8.00},
		"gpt-4.1-mini": {InputPerMTok: 0.40, OutputPerMTok: 1.60},
		"gpt-4.1-nano": {InputPerMTok: 0.10, OutputPerMTok: 0.40},
		"gpt-4o":       {InputPerMTok: 2.50, OutputPerMTok: 10.00},
		"gpt-4o-mini":  {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	}
}

// snapshotSuffix matches a dated snapshot suffix such as "-2025-04-14" or "-0613".
var snapshotSuffix = regexp.MustCompile(`^-\d{4}(-\d{2}-\d{2})?$`)

// lookupPrice finds name's price, falling back from a dated snapshot to its base name.
func lookupPrice(prices map[string]Price, name string) (Price, bool) {
	if p, ok := prices[name]; ok {
		return p, true
	}
	best := ""
	for k := range prices {
		if strings.HasPrefix(name, k) && snapshotSuffix.MatchString(name[len(k):]) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return Price{}, false
	}
	return prices[best], true
}

// UnapprovedError is returned by NewApproved for a model the policy does not approve.
type UnapprovedError struct {
	Model string
}

func (e *UnapprovedError) Error() string {
	return fmt.Sprintf("model %q is not approved by the policy", e.Model)
}

// Error is a failed model call. It never holds the API key.
type Error struct {
	Model      string // "openai:NAME"
	StatusCode int    // the HTTP status; 0 when no response was received
	Type, Code string // the server's error type and code, when it sent them
	Message    string // the server's error message, bounded, API key redacted
	Err        error  // the cause when there was no HTTP response (timeout, connection, decoding)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Model)
	b.WriteString(": ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "http %d", e.StatusCode)
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
		if e.Code != "" {
			b.WriteString(" (" + e.Code + ")")
		} else if e.Type != "" {
			b.WriteString(" (" + e.Type + ")")
		}
		return b.String()
	}
	if e.Message != "" {
		b.WriteString(e.Message)
		if e.Err != nil {
			b.WriteString(": ")
		}
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, e.g. context.DeadlineExceeded for a timed-out request.
func (e *Error) Unwrap() error { return e.Err }

// Option configures a Model.
type Option func(*config)

type config struct {
	baseURL       *string
	apiKey        *string
	httpClient    *http.Client
	timeout       time.Duration
	maxRetries    int
	maxRetryDelay time.Duration
	prices        map[string]Price
	logf          func(string, ...any)
}

// WithBaseURL sets the server's base URL, e.g. "http://localhost:11434/v1". The default is
// $OPENAI_BASE_URL, else the library's default (api.openai.com).
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = &u } }

// WithAPIKey sets the key sent as "Authorization: Bearer KEY". The default is $OPENAI_API_KEY; an
// empty key sends no Authorization header (local servers).
func WithAPIKey(k string) Option { return func(c *config) { c.apiKey = &k } }

// WithHTTPClient sets the HTTP client. The default is the library's.
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.httpClient = h } }

// WithTimeout bounds each request attempt (default DefaultTimeout). 0 leaves only the context's
// deadline.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMaxRetries sets how many times a request is retried after a 408, 409, 429, 5xx or connection
// error (default DefaultMaxRetries). 0 disables retries. A timed-out attempt is not retried.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// WithMaxRetryDelay caps the wait between attempts (default DefaultMaxRetryDelay). A server's
// Retry-After is honoured up to the cap; when it asks for longer, the error is returned at once.
func WithMaxRetryDelay(d time.Duration) Option { return func(c *config) { c.maxRetryDelay = d } }

// WithPrices adds to or overrides entries of the price table (DefaultPrices), keyed by model name
// without the "openai:" prefix.
func WithPrices(p map[string]Price) Option {
	return func(c *config) {
		for k, v := range p {
			c.prices[k] = v
		}
	}
}

// WithLogf sets the logger for notices such as an unpriced model. The default discards them.
func WithLogf(f func(format string, args ...any)) Option { return func(c *config) { c.logf = f } }

// Model is a chat model on an OpenAI-compatible server.
type Model struct {
	model  string // the server's model name
	client sdk.Client
	apiKey string // only to redact it from error messages
	price  Price
	priced bool
	logf   func(string, ...any)
}

// New makes a model adapter for name, the server's model name (e.g. "gpt-4.1-mini"). It does not
// contact the server. The caller must already have checked that the policy approves name; see
// NewApproved. Besides OPENAI_BASE_URL and OPENAI_API_KEY, the library's other OPENAI_* variables
// (OPENAI_ORG_ID, OPENAI_PROJECT_ID) apply as usual.
func New(name string, opts ...Option) (*Model, error) {
	if name == "" || strings.TrimSpace(name) != name {
		return nil, fmt.Errorf("openai: model name %q is empty or has surrounding white space", name)
	}
	c := config{
		timeout:       DefaultTimeout,
		maxRetries:    DefaultMaxRetries,
		maxRetryDelay: DefaultMaxRetryDelay,
		prices:        DefaultPrices(),
		logf:          func(string, ...any) {},
	}
	for _, o := range opts {
		o(&c)
	}
	if c.maxRetries < 0 {
		return nil, fmt.Errorf("openai:%s: max retries %d is negative", name, c.maxRetries)
	}
	if c.timeout < 0 || c.maxRetryDelay <= 0 {
		return nil, fmt.Errorf("openai:%s: timeout must be >= 0 and max retry delay > 0", name)
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	baseURL := os.Getenv("OPENAI_BASE_URL")
	if c.baseURL != nil {
		baseURL = *c.baseURL
	}
	apiKey := os.Getenv("OPENAI_API_KEY")
	if c.apiKey != nil {
		apiKey = *c.apiKey
	}

	ro := []option.RequestOption{
		option.WithAPIKey(apiKey),
		option.WithMaxRetries(c.maxRetries),
		option.WithMaxRetryDelay(c.maxRetryDelay),
	}
	if baseURL != "" {
		ro = append(ro, option.WithBaseURL(baseURL))
	}
	if c.timeout > 0 {
		ro = append(ro, option.WithRequestTimeout(c.timeout))
	}
	// Every response body is bounded: a server that never ends its answer fails the call.
	hc := &http.Client{}
	if c.httpClient != nil {
		*hc = *c.httpClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = limitTransport{base: base, max: MaxResponseBytes}
	ro = append(ro, option.WithHTTPClient(hc))
	m := &Model{model: name, client: sdk.NewClient(ro...), apiKey: apiKey, logf: c.logf}
	m.price, m.priced = lookupPrice(c.prices, name)
	if !m.priced {
		m.logf("openai: model=%s price=unknown cost_usd=0", name)
	}
	return m, nil
}

// NewApproved is New after checking approved(name) — typically policy.(*Policy).ModelApproved. An
// unapproved model gives *UnapprovedError before any client is made, so nothing reaches the network.
func NewApproved(name string, approved func(string) bool, opts ...Option) (*Model, error) {
	if approved == nil || !approved(name) {
		return nil, &UnapprovedError{Model: name}
	}
	return New(name, opts...)
}

// String and GoString print the name only, so that formatting a Model never shows its key.
func (m *Model) String() string   { return m.Name() }
func (m *Model) GoString() string { return m.Name() }

// Name is "openai:NAME".
func (m *Model) Name() string { return "openai:" + m.model }

// Priced reports whether the price table knows the model. When it does not, every turn's CostUSD
// is 0 and the caller should not trust a spend cap.
func (m *Model) Priced() bool { return m.priced }

// Price is the model's price from the table; the zero Price when !Priced().
func (m *Model) Price() Price { return m.price }

// Next sends the conversation and the tool specs to the server and returns the assistant's turn.
func (m *Model) Next(ctx context.Context, msgs []coordinator.Message, tools []coordinator.ToolSpec) (coordinator.Turn, error) {
	params, err := m.request(msgs, tools)
	if err != nil {
		return coordinator.Turn{}, &Error{Model: m.Name(), Err: err}
	}
	resp, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return coordinator.Turn{}, m.wrap(ctx, err)
	}
	if len(resp.Choices) == 0 {
		return coordinator.Turn{}, &Error{Model: m.Name(), Err: errors.New("response has no choices")}
	}
	return coordinator.Turn{
		Message: fromSDK(resp.Choices[0].Message),
		Usage: coordinator.Usage{
			PromptTokens:     int(resp.Usage.PromptTokens),
			CompletionTokens: int(resp.Usage.CompletionTokens),
			CostUSD:          m.price.Cost(int(resp.Usage.PromptTokens), int(resp.Usage.CompletionTokens)),
		},
	}, nil
}

// request maps the conversation and tools to a Chat Completions request.
func (m *Model) request(msgs []coordinator.Message, tools []coordinator.ToolSpec) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: m.model}
	for i, msg := range msgs {
		u, err := toSDK(msg)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, u)
	}
	for _, t := range tools {
		fd := sdk.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = sdk.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			// Keep each schema value's bytes as given.
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(t.Parameters, &raw); err != nil {
				return p, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
			fd.Parameters = make(sdk.FunctionParameters, len(raw))
			for k, v := range raw {
				fd.Parameters[k] = v
			}
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// toSDK maps one coordinator message to its Chat Completions form.
func toSDK(msg coordinator.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case coordinator.RoleSystem:
		return sdk.SystemMessage(msg.Content), nil
	case coordinator.RoleUser:
		return sdk.UserMessage(msg.Content), nil
	case coordinator.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("tool message without tool_call_id")
		}
		return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil
	case coordinator.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(msg.Content)
		}
		for _, tc := range msg.ToolCalls {
			args := string(tc.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// fromSDK maps the server's assistant message to a coordinator message. A refusal with no content
// becomes the content, which the coordinator then rejects as an answer.
func fromSDK(msg sdk.ChatCompletionMessage) coordinator.Message {
	out := coordinator.Message{Role: coordinator.RoleAssistant, Content: msg.Content}
	if out.Content == "" && msg.Refusal != "" {
		out.Content = msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		call := coordinator.ToolCall{ID: tc.ID}
		switch tc.Type {
		case "custom":
			// Free-text input is never a JSON object: encode it as a string so validation refuses it.
			call.Name, call.Args = tc.Custom.Name, jsonString(tc.Custom.Input)
		default: // "function", or absent on some compatible servers
			call.Name, call.Args = tc.Function.Name, rawArgs(tc.Function.Arguments)
		}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i) // some servers omit ids; tool results need one
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	return out
}

// rawArgs keeps the model's arguments as they are when they are valid JSON; otherwise it encodes the
// text as a JSON string, which the coordinator's strict validation refuses.
func rawArgs(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return jsonString(s)
}

func jsonString(s string) json.RawMessage {
	b, err := json.Marshal(s) // a string always marshals (invalid UTF-8 is replaced)
	if err != nil {
		return json.RawMessage(`""`)
	}
	return b
}

// wrap turns an SDK error into an *Error that names the model, carries the HTTP status and the
// server's message, and never contains the API key.
func (m *Model) wrap(ctx context.Context, err error) error {
	e := &Error{Model: m.Name()}
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		// Keep only the fields: the SDK error also holds the request, Authorization header included.
		e.StatusCode = apiErr.StatusCode
		e.Type = policy.Clip(m.redact(apiErr.Type), 100)
		e.Code = policy.Clip(m.redact(apiErr.Code), 100)
		e.Message = policy.Clip(m.redact(apiErr.Message), maxMessageLen)
		return e
	case ctx.Err() != nil:
		e.Message = "request canceled"
		e.Err = ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		e.Message = "request timed out"
		e.Err = context.DeadlineExceeded
	default:
		e.Err = err
	}
	if m.apiKey != "" && e.Err != nil && strings.Contains(e.Err.Error(), m.apiKey) {
		e.Err = errors.New(m.redact(e.Err.Error()))
	}
	return e
}

func (m *Model) redact(s string) string {
	if m.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, m.apiKey, "[redacted]")
}
