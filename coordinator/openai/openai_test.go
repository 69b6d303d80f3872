package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
)

const testKey = "sk-test-SECRETKEY-0123456789"

type request struct {
	Method, Path, Auth string
	Body               map[string]any
}

// fakeServer is an OpenAI-compatible server that records every request and answers the n-th
// (0-based) with reply(n, w, r).
type fakeServer struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []request
	reply func(n int, w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, b)
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		f.mu.Unlock()
		f.reply(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func (f *fakeServer) base() string { return f.URL + "/v1" }

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// completion is a chat.completion body with one choice holding message.
func completion(message string, prompt, completionTokens int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-mini",
		"choices":[{"index":0,"finish_reason":"stop","message":%s}],
		"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		message, prompt, completionTokens, prompt+completionTokens)
}

func apiError(status int, message, typ, code string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After-Ms", "1") // keep retries fast
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code}})
		writeJSON(w, status, string(b))
	}
}

func newModel(t *testing.T, f *fakeServer, opts ...Option) *Model {
	t.Helper()
	opts = append([]Option{WithBaseURL(f.base()), WithAPIKey(testKey)}, opts...)
	m, err := New("gpt-4.1-mini", opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

var userOnly = []coordinator.Message{{Role: coordinator.RoleUser, Content: "task"}}

// asJSON decodes s into generic values, for comparing with a recorded request body.
func asJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %v: %s", err, s)
	}
	return v
}

// turnOf is the model's turn for the user's message, and the fake server, when the server
// answers with message, having counted prompt and completion tokens.
func turnOf(t *testing.T, message string, prompt, completionTokens int) (coordinator.Turn, *fakeServer) {
	t.Helper()
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, completion(message, prompt, completionTokens))
	})
	turn, err := newModel(t, f).Next(context.Background(), userOnly, nil)
	if err != nil {
		t.Fatal(err)
	}
	return turn, f
}

func TestToolCallRoundTrip(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_b","type":"function","function":{"name":"read_page","arguments":"{\"max_bytes\":2048}"}},
			{"id":"call_c","type":"function","function":{"name":"open_url","arguments":" {\"url\": \"http://h/x\"} "}}]}`, 50, 7))
	})
	m := newModel(t, f)
	msgs := []coordinator.Message{
		{Role: coordinator.RoleSystem, Content: "you are careful"},
		{Role: coordinator.RoleUser, Content: "find R-1"},
		{Role: coordinator.RoleAssistant, ToolCalls: []coordinator.ToolCall{
			{ID: "call_a", Name: "open_url", Args: json.RawMessage(`{"url":"http://h/records/R-1"}`)}}},
		{Role: coordinator.RoleTool, ToolCallID: "call_a", Name: "open_url", Content: `{"status":200}`},
		{Role: coordinator.RoleAssistant, Content: "thinking", ToolCalls: []coordinator.ToolCall{
			{ID: "call_z", Name: "search"}}},
		{Role: coordinator.RoleTool, ToolCallID: "call_z", Content: "no results"},
	}
	tools := []coordinator.ToolSpec{
		{Name: "open_url", Description: "Open a URL", Parameters: json.RawMessage(
			`{"type":"object","properties":{"url":{"type":"string","maxLength":2048}},"required":["url"],"additionalProperties":false}`)},
		{Name: "read_page", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	turn, err := m.Next(context.Background(), msgs, tools)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests:\n\tgot  %d\n\twant 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request:\n\tgot  %s %s\n\twant POST /v1/chat/completions", r.Method, r.Path)
	}
	wantBody := map[string]string{
		"model": `"gpt-4.1-mini"`,
		"messages": `[
			{"role":"system","content":"you are careful"},
			{"role":"user","content":"find R-1"},
			{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"open_url","arguments":"{\"url\":\"http://h/records/R-1\"}"}}]},
			{"role":"tool","tool_call_id":"call_a","content":"{\"status\":200}"},
			{"role":"assistant","content":"thinking","tool_calls":[{"id":"call_z","type":"function","function":{"name":"search","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_z","content":"no results"}]`,
		"tools": `[
			{"type":"function","function":{"name":"open_url","description":"Open a URL","parameters":
				{"type":"object","properties":{"url":{"type":"string","maxLength":2048}},"required":["url"],"additionalProperties":false}}},
			{"type":"function","function":{"name":"read_page","parameters":{"type":"object","properties":{}}}}]`,
	}
	for k, want := range wantBody {
		if got := r.Body[k]; !reflect.DeepEqual(got, asJSON(t, want)) {
			g, _ := json.Marshal(got)
			t.Errorf("request %s:\n\tgot  %s\n\twant %s", k, g, want)
		}
	}

	want := coordinator.Turn{
		Message: coordinator.Message{Role: coordinator.RoleAssistant, ToolCalls: []coordinator.ToolCall{
			{ID: "call_b", Name: "read_page", Args: json.RawMessage(`{"max_bytes":2048}`)},
			{ID: "call_c", Name: "open_url", Args: json.RawMessage(` {"url": "http://h/x"} `)},
		}},
		Usage: coordinator.Usage{PromptTokens: 50, CompletionTokens: 7, CostUSD: Price{0.40, 1.60}.Cost(50, 7)},
	}
	if !reflect.DeepEqual(turn, want) {
		t.Errorf("turn:\n\tgot  %+v\n\twant %+v", turn, want)
	}
}

func TestFinalText(t *testing.T) {
	tests := []struct {
		name, message, want string
	}{
		{"answer", `{"role":"assistant","content":"{\"answer\":\"42\"}"}`, `{"answer":"42"}`},
		{"refusal becomes content", `{"role":"assistant","content":null,"refusal":"I can't help"}`, "I can't help"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn, f := turnOf(t, tc.message, 10, 5)
			got := turn.Message
			wantMsg := coordinator.Message{Role: coordinator.RoleAssistant, Content: tc.want}
			if !reflect.DeepEqual(got, wantMsg) {
				t.Errorf("message:\n\tgot  %+v\n\twant %+v", got, wantMsg)
			}
			if turn.Simulated {
				t.Errorf("Simulated:\n\tgot  true\n\twant false")
			}
			if _, ok := f.requests()[0].Body["tools"]; ok {
				t.Errorf("request with no tools sent a tools field")
			}
		})
	}
}

func TestUsageAndCost(t *testing.T) {
	tests := []struct {
		name       string
		model      string
		opts       []Option
		wantCost   float64
		wantPriced bool
	}{
		{"gpt-4.1-mini", "gpt-4.1-mini", nil, (1e6*0.40 + 5e5*1.60) / 1e6, true},
		{"gpt-4.1", "gpt-4.1", nil, (1e6*2.00 + 5e5*8.00) / 1e6, true},
		{"gpt-4o-mini", "gpt-4o-mini", nil, (1e6*0.15 + 5e5*0.60) / 1e6, true},
		{"dated snapshot uses base price", "gpt-4.1-mini-2025-04-14", nil, (1e6*0.40 + 5e5*1.60) / 1e6, true},
		{"unknown model costs 0 and is flagged", "llama3.1:8b", nil, 0, false},
		{"price table override", "gpt-4.1", []Option{WithPrices(map[string]Price{"gpt-4.1": {1, 2}})}, 1 + 1, true},
		{"price table addition", "qwen2.5", []Option{WithPrices(map[string]Price{"qwen2.5": {0.5, 0}})}, 0.5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1_000_000, 500_000))
			})
			var logs []string
			opts := append([]Option{WithBaseURL(f.base()), WithAPIKey(testKey),
				WithLogf(func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })}, tc.opts...)
			m, err := New(tc.model, opts...)
			if err != nil {
				t.Fatal(err)
			}
			turn, err := m.Next(context.Background(), userOnly, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantUsage := coordinator.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000, CostUSD: tc.wantCost}
			if got := turn.Usage; got.PromptTokens != wantUsage.PromptTokens || got.CompletionTokens != wantUsage.CompletionTokens ||
				math.Abs(got.CostUSD-wantUsage.CostUSD) > 1e-9 {
				t.Errorf("usage:\n\tgot  %+v\n\twant %+v", got, wantUsage)
			}
			if m.Priced() != tc.wantPriced {
				t.Errorf("Priced():\n\tgot  %v\n\twant %v", m.Priced(), tc.wantPriced)
			}
			if gotLogged := len(logs) > 0; gotLogged == tc.wantPriced {
				t.Errorf("unpriced notice logged:\n\tgot  %v %q\n\twant %v", gotLogged, logs, !tc.wantPriced)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	ok := completion(`{"role":"assistant","content":"done"}`, 1, 1)
	tests := []struct {
		name       string
		opts       []Option
		reply      func(n int, w http.ResponseWriter, r *http.Request)
		wantReqs   int
		wantStatus int           // 0: success
		minWait    time.Duration // the server-directed wait that must have passed
	}{
		{"429 twice then success honours Retry-After", nil, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n < 2 {
				w.Header().Set("Retry-After", "0")
				writeJSON(w, 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
				return
			}
			writeJSON(w, 200, ok)
		}, 3, 0, 0},
		{"Retry-After-Ms is waited for", nil, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 0 {
				w.Header().Set("Retry-After-Ms", "300")
				writeJSON(w, 503, `{"error":{"message":"busy"}}`)
				return
			}
			writeJSON(w, 200, ok)
		}, 2, 0, 300 * time.Millisecond},
		{"500 forever stops after max retries", nil, apiError(500, "boom", "server_error", ""), 3, 500, 0},
		{"500 forever with 0 retries", []Option{WithMaxRetries(0)}, apiError(500, "boom", "server_error", ""), 1, 500, 0},
		{"503 forever with 4 retries", []Option{WithMaxRetries(4)}, apiError(503, "overloaded", "", ""), 5, 503, 0},
		{"400 is not retried", nil, apiError(400, "bad request", "invalid_request_error", ""), 1, 400, 0},
		{"Retry-After above the cap is not waited for", []Option{WithMaxRetryDelay(time.Second)},
			func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "3600")
				writeJSON(w, 429, `{"error":{"message":"quota","type":"requests"}}`)
			}, 1, 429, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			start := time.Now()
			_, err := newModel(t, f, tc.opts...).Next(context.Background(), userOnly, nil)
			// The upper bound only tells "did not wait for a long Retry-After" (an hour above)
			// from "waited": generous, so that a loaded machine does not fail it.
			if d := time.Since(start); d > 30*time.Second || d < tc.minWait {
				t.Errorf("took %v; want at least %v and no long wait", d, tc.minWait)
			}
			if got := len(f.requests()); got != tc.wantReqs {
				t.Errorf("requests:\n\tgot  %d\n\twant %d", got, tc.wantReqs)
			}
			if tc.wantStatus == 0 {
				if err != nil {
					t.Errorf("Next: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != tc.wantStatus {
				t.Fatalf("error:\n\tgot  %T %v\n\twant *Error with status %d", err, err, tc.wantStatus)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	f := newFake(t, apiError(500, "boom", "server_error", "overheated"))
	_, err := newModel(t, f, WithMaxRetries(0)).Next(context.Background(), userOnly, nil)
	want := "openai:gpt-4.1-mini: http 500 Internal Server Error: boom (overheated)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n\tgot  %v\n\twant %s", err, want)
	}
}

func TestInvalidToolCallJSONPassesThroughAsString(t *testing.T) {
	tests := []struct {
		name, args, wantArgs string
	}{
		{"valid object kept as is", `{"url":"http://h/"}`, `{"url":"http://h/"}`},
		{"truncated object", `{"url": "http://h/`, `"{\"url\": \"http://h/"`},
		{"empty", ``, `""`},
		{"python dict", `{'url': 'x'}`, `"{'url': 'x'}"`},
		{"trailing garbage", `{"a":1} extra`, `"{\"a\":1} extra"`},
		{"valid non-object kept; coordinator refuses it", `[1,2]`, `[1,2]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(tc.args)
			turn, _ := turnOf(t, `{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"open_url","arguments":`+string(args)+`}}]}`, 1, 1)
			if len(turn.Message.ToolCalls) != 1 {
				t.Fatalf("tool calls:\n\tgot  %d\n\twant 1", len(turn.Message.ToolCalls))
			}
			got := turn.Message.ToolCalls[0].Args
			if string(got) != tc.wantArgs {
				t.Errorf("Args for %q:\n\tgot  %s\n\twant %s", tc.args, got, tc.wantArgs)
			}
			if !json.Valid(got) {
				t.Errorf("Args %s is not valid JSON", got)
			}
		})
	}
}

func TestCompatibleServerQuirks(t *testing.T) {
	tests := []struct {
		name, message string
		want          []coordinator.ToolCall
	}{
		{"missing id and type",
			`{"role":"assistant","tool_calls":[{"function":{"name":"read_page","arguments":"{}"}}]}`,
			[]coordinator.ToolCall{{ID: "call_0", Name: "read_page", Args: json.RawMessage(`{}`)}}},
		{"arguments sent as an object",
			`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"open_url","arguments":{"url":"http://h/"}}}]}`,
			[]coordinator.ToolCall{{ID: "c", Name: "open_url", Args: json.RawMessage(`{"url":"http://h/"}`)}}},
		{"custom tool input is never an object",
			`{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"open_url","input":"{\"url\":1}"}}]}`,
			[]coordinator.ToolCall{{ID: "c", Name: "open_url", Args: json.RawMessage(`"{\"url\":1}"`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn, _ := turnOf(t, tc.message, 1, 1)
			if !reflect.DeepEqual(turn.Message.ToolCalls, tc.want) {
				t.Errorf("tool calls:\n\tgot  %+v\n\twant %+v", turn.Message.ToolCalls, tc.want)
			}
		})
	}
}

func TestNewApproved(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1, 1))
	})
	approved := func(name string) bool { return name == "gpt-4.1-mini" }
	tests := []struct {
		name     string
		model    string
		approved func(string) bool
		wantErr  bool
	}{
		{"unapproved model refused", "gpt-4o", approved, true},
		{"prefixed name is not the approved name", "openai:gpt-4.1-mini", approved, true},
		{"nil approval refuses everything", "gpt-4.1-mini", nil, true},
		{"approved model made", "gpt-4.1-mini", approved, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewApproved(tc.model, tc.approved, WithBaseURL(f.base()), WithAPIKey(testKey))
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("NewApproved: %v", err)
				}
				return
			}
			var ue *UnapprovedError
			if !errors.As(err, &ue) || ue.Model != tc.model || m != nil {
				t.Errorf("NewApproved(%q):\n\tgot  %v, %T %v\n\twant nil, *UnapprovedError{%q}", tc.model, m, err, err, tc.model)
			}
		})
	}
	if got := len(f.requests()); got != 0 {
		t.Errorf("requests to the server:\n\tgot  %d\n\twant 0", got)
	}
}

func TestAPIKeyIsBearerAndNeverInErrors(t *testing.T) {
	t.Run("sent as bearer", func(t *testing.T) {
		f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1, 1))
		})
		if _, err := newModel(t, f).Next(context.Background(), userOnly, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := f.requests()[0].Auth, "Bearer "+testKey; got != want {
			t.Errorf("Authorization:\n\tgot  %q\n\twant %q", got, want)
		}
	})
	t.Run("empty key sends no header", func(t *testing.T) {
		f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1, 1))
		})
		m, err := New("gpt-4.1-mini", WithBaseURL(f.base()), WithAPIKey(""))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Next(context.Background(), userOnly, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.requests()[0].Auth; got != "" {
			t.Errorf("Authorization:\n\tgot  %q\n\twant none", got)
		}
	})

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	leaky := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, errors.New("proxy refused " + r.Header.Get("Authorization"))
	})}
	tests := []struct {
		name  string
		reply func(int, http.ResponseWriter, *http.Request)
		base  string // overrides the fake's base URL
		opts  []Option
	}{
		{"401 echoing the key", apiError(401, "Incorrect API key provided: "+testKey, "invalid_request_error", "invalid_api_key"), "", nil},
		{"key in type and code", apiError(403, "no", testKey, testKey), "", nil},
		{"long message with the key at the cut", apiError(400, strings.Repeat("x", maxMessageLen-5)+testKey, "", ""), "", nil},
		{"connection refused", nil, closedURL + "/v1", nil},
		{"transport error quoting the header", nil, "http://127.0.0.1:1/v1", []Option{WithHTTPClient(leaky)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = newFake(t, tc.reply).base()
			}
			opts := append([]Option{WithBaseURL(base), WithAPIKey(testKey), WithMaxRetries(0)}, tc.opts...)
			m, err := New("gpt-4.1-mini", opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Next(context.Background(), userOnly, nil)
			if err == nil {
				t.Fatal("Next: got nil error")
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(s, testKey) || strings.Contains(s, "SECRETKEY") {
					t.Errorf("error text contains the API key: %s", s)
				}
			}
			if !strings.HasPrefix(err.Error(), "openai:gpt-4.1-mini: ") {
				t.Errorf("error does not name the model: %v", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTimeoutHonoured(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		writeJSON(w, 200, completion(`{"role":"assistant","content":"late"}`, 1, 1))
	})
	m := newModel(t, f, WithTimeout(50*time.Millisecond))
	start := time.Now()
	_, err := m.Next(context.Background(), userOnly, nil)
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error:\n\tgot  %v\n\twant context.DeadlineExceeded", err)
	}
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("error:\n\tgot  %T %v\n\twant *Error saying it timed out", err, err)
	}
	if elapsed > 4500*time.Millisecond { // the server holds its answer for 5 s
		t.Errorf("Next took %v with a 50ms timeout: it waited for the server", elapsed)
	}
}

func TestContextCanceled(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := newModel(t, f).Next(ctx, userOnly, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error:\n\tgot  %v\n\twant context.Canceled", err)
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1, 1))
	})
	m := newModel(t, f)
	tests := []struct {
		name  string
		msgs  []coordinator.Message
		tools []coordinator.ToolSpec
	}{
		{"unknown role", []coordinator.Message{{Role: "developer", Content: "x"}}, nil},
		{"tool message without call id", []coordinator.Message{{Role: coordinator.RoleTool, Content: "x"}}, nil},
		{"tool parameters not an object", userOnly, []coordinator.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e *Error
			if _, err := m.Next(context.Background(), tc.msgs, tc.tools); !errors.As(err, &e) {
				t.Errorf("Next:\n\tgot  %T %v\n\twant *Error", err, err)
			}
		})
	}
	if got := len(f.requests()); got != 0 {
		t.Errorf("requests:\n\tgot  %d\n\twant 0", got)
	}
}

func TestNoChoices(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}`)
	})
	if _, err := newModel(t, f).Next(context.Background(), userOnly, nil); err == nil {
		t.Errorf("Next with no choices: got nil error")
	}
}

func TestEnvironmentDefaults(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":"done"}`, 1, 1))
	})
	t.Setenv("OPENAI_BASE_URL", f.base())
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	m, err := New("gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Next(context.Background(), userOnly, nil); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.Auth != "Bearer sk-from-env" || r.Body["model"] != "gpt-4o-mini" {
		t.Errorf("request:\n\tgot  auth %q model %v\n\twant auth %q model gpt-4o-mini", r.Auth, r.Body["model"], "Bearer sk-from-env")
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name  string
		model string
		opts  []Option
	}{
		{"empty name", "", nil},
		{"padded name", " gpt-4.1 ", nil},
		{"negative retries", "gpt-4.1", []Option{WithMaxRetries(-1)}},
		{"negative timeout", "gpt-4.1", []Option{WithTimeout(-time.Second)}},
		{"zero retry delay", "gpt-4.1", []Option{WithMaxRetryDelay(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.model, tc.opts...); err == nil {
				t.Errorf("New(%q): got nil error", tc.model)
			}
		})
	}
	m, err := New("gpt-4.1-mini", WithAPIKey(""))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Name(), "openai:gpt-4.1-mini"; got != want {
		t.Errorf("Name():\n\tgot  %s\n\twant %s", got, want)
	}
}
