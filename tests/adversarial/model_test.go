package adversarial

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/chattest"
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
		req, err := chattest.ReadRequest(bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(pace):
		case <-r.Context().Done():
			return
		}
		turn, err := play.Next(context.Background(), req.Messages, nil)
		if err != nil {
			http.Error(w, `{"error":{"message":"the script ran out"}}`, http.StatusBadRequest)
			return
		}
		chattest.WriteTurn(w, "chatcmpl-paced", req.Model, turn)
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
