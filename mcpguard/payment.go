package mcpguard

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/browser-agent/browser-agent/bridge"
)

// Paying is a person's (docs/guard-write-mode.md, "Refused whatever a person approves"): a write
// to a payment processor is refused without being offered; on a page that shows a card field no
// page-changing call passes; a click on a control named with a money word is refused, for
// commits the network cannot see (a payment frame of another process, a saved card). Each is
// recognised by word lists and origins, not by meaning: the seed's consequences (shared/seeds/000)
// say what that costs.

// Rules of the payment refusals.
const (
	RuleMoney    = "guard.money"     // a click on a control named with a money word
	RuleCardPage = "guard.card_page" // a page-changing call on a page that shows a card field
	RulePayment  = "guard.payment"   // a write to a payment origin (a hold row of its own)
)

// takeOver is what every payment refusal tells the client.
const takeOver = "a person pays themselves: take over"

// BuiltinPaymentOrigins are well-known payment processors' origins; a policy's
// guard.payment_origins adds to them.
var BuiltinPaymentOrigins = []string{
	"https://checkout.stripe.com", "https://api.stripe.com", "https://js.stripe.com", "https://hooks.stripe.com",
	"https://www.paypal.com", "https://api-m.paypal.com", "https://www.sandbox.paypal.com", "https://api-m.sandbox.paypal.com",
	"https://pay.google.com", "https://payments.google.com",
	"https://apple-pay-gateway.apple.com",
	"https://checkoutshopper-live.adyen.com", "https://checkoutshopper-test.adyen.com",
	"https://api.checkout.com", "https://secure.checkout.com",
	"https://api.braintreegateway.com", "https://js.braintreegateway.com",
	"https://connect.squareup.com", "https://pci-connect.squareup.com",
	"https://pay.amazon.com", "https://payments.amazon.com",
	"https://js.klarna.com", "https://api.klarna.com",
	"https://accept.authorize.net", "https://secure.authorize.net",
	"https://secure.worldpay.com", "https://api.mollie.com", "https://checkout.razorpay.com",
}

// paymentOrigin says whether raw's origin is a payment processor's: built in, or in extra (the
// policy's, canonical).
func paymentOrigin(raw string, extra []string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true // a URL the guard cannot read is not sent
	}
	o := strings.ToLower(u.Scheme + "://" + u.Host)
	if (u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		o = strings.ToLower(u.Scheme + "://" + u.Hostname())
	}
	return slices.Contains(BuiltinPaymentOrigins, o) || slices.Contains(extra, o)
}

// moneyWords name controls that commit money, matched as whole words of a control's name
// ("Pay 120 EUR", "Place order"). "Book now" and "Reserve" are not among them: on hotel and
// travel sites they open the details form.
var moneyWords = []string{
	"pay", "payment", "buy", "purchase", "checkout", "check out", "place order", "order now",
	"complete order", "confirm order", "submit order", "donate", "subscribe", "pay now", "buy now",
}

// moneyWord is the money word a control's name holds, or "".
func moneyWord(name string) string {
	n := " " + normalizeWords(name) + " "
	for _, w := range moneyWords {
		if strings.Contains(n, " "+w+" ") {
			return w
		}
	}
	return ""
}

// normalizeWords lowercases s and turns every run of characters other than letters and digits
// into one space.
func normalizeWords(s string) string {
	var b strings.Builder
	space := true
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && !strings.ContainsRune("\u00a0\u2000\u2001\u2002\u2003\u2009\u200b", r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// cardWords name card fields, matched as whole words of a field's names.
var cardWords = []string{"card number", "cardnumber", "credit card", "debit card", "card no", "ccn", "cvv", "cvc", "csc", "cvv2", "cvc2", "expiry date", "expiration date", "name on card"}

// cardField says why an editable element is a card field, or "": an autocomplete cc- token, or a
// card word among its names (the bridge's detection, in this package's words).
func cardField(c bridge.Control) string {
	for _, tok := range strings.Fields(strings.ToLower(c.Autocomplete)) {
		if strings.HasPrefix(tok, "cc-") {
			return "autocomplete " + autocompleteWord(tok)
		}
	}
	for _, t := range c.Names {
		n := " " + normalizeWords(t) + " "
		for _, w := range cardWords {
			if strings.Contains(n, " "+w+" ") {
				return "named by the words " + w
			}
		}
	}
	return ""
}

// autocompleteWord is tok when HTML defines it for cards, else "cc-*": never the page's own words.
func autocompleteWord(tok string) string {
	switch tok {
	case "cc-name", "cc-given-name", "cc-additional-name", "cc-family-name", "cc-number", "cc-exp",
		"cc-exp-month", "cc-exp-year", "cc-csc", "cc-type":
		return tok
	}
	return "cc-*"
}

// pageChanging are the calls that change a page; on a page that shows a card field none passes.
var pageChanging = []string{"browser_click", "browser_type", "browser_select_option", "browser_press_key"}

// vetPayment decides a page-changing call against the payment rules; target is the role and name
// the guard's own snapshot gives the call's ref ("" for a key press).
//
// They are the write mode's: in read-only mode the network refuses every write, so no call can
// commit money, and read-only mode stays as it was (no field read before each call).
func (g *Guard) vetPayment(ctx context.Context, name, target string) *verdict {
	if g.holds == nil || !slices.Contains(pageChanging, name) {
		return nil
	}
	if name == "browser_click" {
		_, n, _ := strings.Cut(target, " ")
		if w := moneyWord(strings.Trim(n, `"`)); w != "" {
			return refuse(RuleMoney, "the control is named with the money word %q: %s", w, takeOver)
		}
	}
	why, err := g.cardOnPage(ctx)
	if err != nil {
		return refuse(RuleCardPage, "the guard could not read the page's fields before %s: %v", name, err)
	}
	if why != "" {
		return refuse(RuleCardPage, "the page shows a card field (%s): %s", why, takeOver)
	}
	return nil
}

// cardOnPage says why the page shows a card field, or "": every editable field of every frame,
// filled or not, read in the guard's isolated world (its own browser), or through the upstream
// when the wall is off.
func (g *Guard) cardOnPage(ctx context.Context) (string, error) {
	var fields []field
	switch {
	case g.browser == nil && g.up == nil:
		return "", errors.New("no page to read")
	case g.browser != nil:
		fs, err := g.browser.fields(ctx, true)
		if err != nil {
			return "", err
		}
		fields = fs
	default:
		text, err := g.upcall(ctx, "browser_evaluate", map[string]any{"function": allFields(pageJS)})
		if err != nil {
			return "", err
		}
		var page struct {
			Controls []field `json:"controls"`
		}
		if err := evalResult(text, &page); err != nil {
			return "", err
		}
		fields = page.Controls
	}
	for _, f := range fields {
		if why := cardField(f.Control); why != "" {
			return why, nil
		}
	}
	return "", nil
}

// allFields is a field reader (pageJS, frameJS) that lists every editable field, filled or not.
func allFields(js string) string {
	return strings.Replace(js, "const d = D(el); if (d.filled) out.push(d);", "out.push(D(el));", 1)
}
