package coordinator

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
)

type noNetwork struct{ asked atomic.Int32 }

func (n *noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	n.asked.Add(1)
	return nil, errors.New("no network in this test")
}

// TestTokenizerEmbedded: the tokenizer loads its vocabulary from the binary, with no request
// (tiktoken-go's own loader downloads it), and counts as OpenAI's o200k_base does.
func TestTokenizerEmbedded(t *testing.T) {
	nn := &noNetwork{}
	saved := http.DefaultTransport
	http.DefaultTransport = nn
	defer func() { http.DefaultTransport = saved }()
	enc, err := loadEncoding()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if n := nn.asked.Load(); n != 0 {
		t.Errorf("the tokenizer made %d requests", n)
	}
	for s, want := range map[string]int{"hello world": 2, "": 0} {
		if got := len(enc.Encode(s, nil, nil)); got != want {
			t.Errorf("tokens of %q: got %d, want %d", s, got, want)
		}
	}
	// A run's prompt: more than its parts, each message framed.
	msgs := []Message{{Role: RoleSystem, Content: "hello world"}, {Role: RoleUser, Content: "hello world"}}
	if got, want := PromptTokens(msgs, nil), 2*(tokensPerMessage+1+2)+tokensReply; got != want {
		t.Errorf("PromptTokens: got %d, want %d", got, want)
	}
}
