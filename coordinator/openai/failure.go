package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// MaxResponseBytes bounds a response body from the model server. A longer body (a server that
// streams without end) fails the call with ErrResponseTooLarge.
const MaxResponseBytes = 8 << 20

// ErrResponseTooLarge is the cause of a call whose response body passed MaxResponseBytes.
var ErrResponseTooLarge = fmt.Errorf("response larger than %d MiB", MaxResponseBytes>>20)

// limitTransport cuts every response body at max bytes.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// Reason says in one short line which part failed and what to do: the model server timed out,
// answered 5xx, sent malformed JSON or a response without end, or went away mid-answer. It
// implements coordinator.ModelFailure.
func (e *Error) Reason() string {
	var syn *json.SyntaxError
	var ute *json.UnmarshalTypeError
	var op *net.OpError
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.StatusCode >= 500:
		return fmt.Sprintf("%s answered HTTP %d %s; try again later or check the server", e.Model, e.StatusCode, http.StatusText(e.StatusCode))
	case e.StatusCode == http.StatusTooManyRequests:
		return fmt.Sprintf("%s is rate limited (HTTP 429); try again later", e.Model)
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("%s refused the API key (HTTP %d); check OPENAI_API_KEY", e.Model, e.StatusCode)
	case e.StatusCode != 0:
		return e.Error()
	case errors.Is(e.Err, ErrResponseTooLarge):
		return fmt.Sprintf("%s sent a response without end (over %d MiB); check the server", e.Model, MaxResponseBytes>>20)
	case errors.Is(e.Err, context.DeadlineExceeded):
		return fmt.Sprintf("%s did not answer in time; check the server and its load", e.Model)
	case errors.Is(e.Err, context.Canceled):
		return fmt.Sprintf("%s: request canceled", e.Model)
	case errors.As(e.Err, &syn), errors.As(e.Err, &ute), strings.Contains(msg, "invalid character"),
		strings.Contains(msg, "unexpected end of JSON"):
		return fmt.Sprintf("%s sent a response that is not valid JSON; check that the server speaks the OpenAI API", e.Model)
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s cannot be reached (connection refused); check that the server runs and OPENAI_BASE_URL", e.Model)
	case errors.Is(e.Err, io.ErrUnexpectedEOF), errors.Is(e.Err, io.EOF), errors.Is(e.Err, syscall.ECONNRESET),
		strings.Contains(msg, "EOF"), strings.Contains(msg, "connection reset"):
		return fmt.Sprintf("%s closed the connection mid-answer; check that the server runs", e.Model)
	case errors.As(e.Err, &op):
		return fmt.Sprintf("%s cannot be reached (%s); check that the server runs and OPENAI_BASE_URL", e.Model, op.Op)
	}
	return e.Error()
}
