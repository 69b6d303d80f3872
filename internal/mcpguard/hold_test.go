package mcpguard

import (
	"testing"

	"github.com/browser-agent/browser-agent/proxy"
)

func TestCarriesCredential(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"dest=Lisbon&date=2026-12-24", false},
		{"dest=Lisbon&cardnumber=1234", true},
		{"dest=Lisbon&password=x", true},
		{"dest=Lisbon&note=4111+1111+1111+1111", true}, // a card number in any field
		{"dest=Lisbon&ref=4111-1111-1111-1112", false}, // not a card: the checksum fails
		{`{"pan":"4111111111111111"}`, true},
		{"phone=%2B351912345678", false},
	} {
		got := carriesCredential(&proxy.Held{Method: "POST", URL: "http://x/y", Body: []byte(c.body)})
		if (got != "") != c.want {
			t.Errorf("carriesCredential(%q):\n\tgot  %q\n\twant credential %v", c.body, got, c.want)
		}
	}
}
