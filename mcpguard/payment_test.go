package mcpguard

import (
	"testing"

	"github.com/browser-agent/browser-agent/bridge"
)

// TestMoneyWord: a control named with a money word is found whatever its case and punctuation;
// "Book now", "Reserve" and words that only hold a money word are not.
func TestMoneyWord(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"Pay 120 EUR", "pay"},
		{"PAY NOW", "pay"},
		{"Place order", "place order"},
		{"Proceed to checkout →", "checkout"},
		{"Buy", "buy"},
		{"Complete purchase", "purchase"},
		{"Book now", ""},
		{"Reserve", ""},
		{"Continue", ""},
		{"Payroll reports", ""},
		{"Find trips", ""},
	} {
		if got := moneyWord(c.name); got != c.want {
			t.Errorf("moneyWord(%q):\n\tgot  %q\n\twant %q", c.name, got, c.want)
		}
	}
}

// TestCardField: a card field is known by its autocomplete token or a card word among its names;
// the reason holds only this package's words.
func TestCardField(t *testing.T) {
	for _, c := range []struct {
		name string
		c    bridge.Control
		want string
	}{
		{"cc-number", bridge.Control{Tag: "input", Type: "text", Autocomplete: "cc-number"}, "autocomplete cc-number"},
		{"page's own cc token", bridge.Control{Tag: "input", Type: "text", Autocomplete: "section-x cc-secret-thing"}, "autocomplete cc-*"},
		{"label", bridge.Control{Tag: "input", Type: "text", Names: []string{"Card number"}}, "named by the words card number"},
		{"cvc", bridge.Control{Tag: "input", Type: "text", Names: []string{"CVC:"}}, "named by the words cvc"},
		{"destination", bridge.Control{Tag: "input", Type: "text", Names: []string{"Destination", "dest"}}, ""},
		{"gift card message", bridge.Control{Tag: "textarea", Names: []string{"Gift card message"}}, ""},
	} {
		if got := cardField(c.c); got != c.want {
			t.Errorf("cardField(%s):\n\tgot  %q\n\twant %q", c.name, got, c.want)
		}
	}
}

// TestPaymentOrigin: the built-in processors and the policy's own origins, default ports folded;
// another origin of the same host is not one.
func TestPaymentOrigin(t *testing.T) {
	extra := []string{"https://pay.example", "http://127.0.0.1:8099"}
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"https://checkout.stripe.com/c/pay/cs_test", true},
		{"https://www.paypal.com:443/checkoutnow", true},
		{"https://pay.example/charge", true},
		{"https://PAY.example/charge", true},
		{"http://127.0.0.1:8099/inner", true},
		{"http://127.0.0.1:8098/inner", false},
		{"http://pay.example/charge", false},
		{"https://shop.example/cart", false},
	} {
		if got := paymentOrigin(c.url, extra); got != c.want {
			t.Errorf("paymentOrigin(%q):\n\tgot  %v\n\twant %v", c.url, got, c.want)
		}
	}
}
