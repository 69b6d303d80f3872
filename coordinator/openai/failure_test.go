package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFailureReasons: each way the model server fails gives a short reason naming it and what to
// do (coordinator.ModelFailure).
func TestFailureReasons(t *testing.T) {
	const m = "openai:gpt-4.1-mini"
	tests := []struct {
		name  string
		reply func(n int, w http.ResponseWriter, r *http.Request)
		opts  []Option
		want  string
	}{
		{"timeout", func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, []Option{WithTimeout(50 * time.Millisecond)}, m + " did not answer in time; check the server and its load"},
		{"502", func(_ int, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 502, `{"error":{"message":"bad gateway"}}`)
		}, nil, m + " answered HTTP 502 Bad Gateway; try again later or check the server"},
		{"malformed json", func(_ int, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"choices": [nope]}`)
		}, nil, m + " sent a response that is not valid JSON; check that the server speaks the OpenAI API"},
		{"endless", func(_ int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"content":"`)
			b := []byte(strings.Repeat("x", 1<<16))
			for r.Context().Err() == nil {
				if _, err := w.Write(b); err != nil {
					return
				}
			}
		}, nil, m + " sent a response without end (over 8 MiB); check the server"},
		{"unauthorized", func(_ int, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 401, `{"error":{"message":"bad key"}}`)
		}, nil, m + " refused the API key (HTTP 401); check OPENAI_API_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			mod := newModel(t, f, append([]Option{WithMaxRetries(0)}, tc.opts...)...)
			_, err := mod.Next(context.Background(), userOnly, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error:\n\tgot  %T %v\n\twant *Error", err, err)
			}
			if got := e.Reason(); got != tc.want {
				t.Errorf("Reason():\n\tgot  %q\n\twant %q", got, tc.want)
			}
			if strings.Contains(e.Reason(), testKey) {
				t.Errorf("Reason() holds the API key")
			}
		})
	}
}
