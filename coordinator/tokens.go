package coordinator

import (
	"encoding/json"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// TokenEncoding is the BPE encoding tokens are counted in: the one of the models the policies
// approve (gpt-4.1, gpt-4o and their minis).
const TokenEncoding = "o200k_base"

// encoding is the tokenizer, loaded once. Its vocabulary is embedded in the binary
// (tiktoken-go-loader): the loader set here reads it from there, never from the network, which is
// tiktoken-go's default.
var encoding = sync.OnceValues(loadEncoding)

func loadEncoding() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	return tiktoken.GetEncoding(TokenEncoding)
}

// CountTokens is the number of tokens of s in TokenEncoding.
func CountTokens(s string) int {
	enc, err := encoding()
	if err != nil {
		panic("coordinator: the embedded tokenizer does not load: " + err.Error()) // embedded data
	}
	return len(enc.Encode(s, nil, nil))
}

// Chat framing, as OpenAI documents it for its chat models: every message costs a few tokens
// besides its content, and the reply is primed with a few more.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensReply      = 3
)

// PromptTokens counts what one model turn sends: the tool specs (as their JSON) and every message
// of the conversation so far, each with its chat framing. A chat model is billed this at every
// turn, since the whole conversation is sent again.
func PromptTokens(msgs []Message, tools []ToolSpec) int {
	n := tokensReply
	if len(tools) > 0 {
		b, _ := json.Marshal(tools)
		n += CountTokens(string(b))
	}
	for _, m := range msgs {
		n += tokensPerMessage + CountTokens(m.Role) + messageTokens(m)
		if m.Name != "" {
			n += tokensPerName + CountTokens(m.Name)
		}
	}
	return n
}

// OutputTokens counts what a model turn produced: its text and its tool calls (name and arguments).
func OutputTokens(m Message) int { return messageTokens(m) }

func messageTokens(m Message) int {
	n := CountTokens(m.Content)
	for _, c := range m.ToolCalls {
		n += CountTokens(c.Name) + CountTokens(string(c.Args))
	}
	return n
}
