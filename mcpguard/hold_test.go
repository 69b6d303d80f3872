package mcpguard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
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
		{`{"trip":{"seats":2,"password":"x"}}`, true}, // a credential key at any depth
		{`{"trip":{"seats":2,"note":"4111 1111 1111 1111"}}`, true},
		{`{"trip":{"seats":2}}`, false},
		{"--b\r\nContent-Disposition: form-data; name=\"cc-number\"\r\n\r\n12\r\n--b--\r\n", true},
	} {
		ct := ""
		if strings.HasPrefix(c.body, "--b") {
			ct = "multipart/form-data; boundary=b"
		}
		got := carriesCredential(&proxy.Held{Method: "POST", URL: "http://x/y", ContentType: ct, Body: []byte(c.body)})
		if (got != "") != c.want {
			t.Errorf("carriesCredential(%q):\n\tgot  %q\n\twant credential %v", c.body, got, c.want)
		}
	}
}

// TestPreview: the person sees every field of a held write, in body order, whatever its
// encoding, by the label the page's form gives it; a credential-named field, a field the page's
// form shows as a credential or card, and a card-shaped value (by Luhn, whatever its name) are
// shown as "hidden".
func TestPreview(t *testing.T) {
	for _, c := range []struct {
		name, ct, body, want string
		labels               map[string]heldLabel
	}{
		{"urlencoded", "application/x-www-form-urlencoded", "dest=Lisbon&seats=2&dest=Porto", "[dest=Lisbon seats=2 dest=Porto]", nil},
		{"no type", "", "a=1+2&b=%C3%A9", "[a=1 2 b=é]", nil},
		{"json nested", "application/json", `{"trip":{"seats":2,"to":"Faro"},"tags":["a"]}`, "[tags[0]=a trip.seats=2 trip.to=Faro]", nil},
		{"multipart with a file", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"who\"\r\n\r\nAna\r\n--b\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"x.txt\"\r\n\r\nhello\r\n--b--\r\n", "[who=Ana doc=a file of 5 bytes]", nil},
		{"credential name hidden", "", "user=ana&password=hunter2", "[user=ana password=hidden]", nil},
		{"card value hidden whatever its name", "", "note=4111+1111+1111+1111&ref=4111-1111-1111-1112", "[note=hidden ref=4111-1111-1111-1112]", nil},
		{"not a form", "application/octet-stream", "\x00\x01", "[(body)=2 bytes of application/octet-stream, not a form]", nil},
		{"labels from the page's form", "", "fullname=Ana&x7=12", "[Full name (fullname)=Ana Seats (x7)=12]",
			map[string]heldLabel{"fullname": {label: "Full name"}, "x7": {label: "Seats"}}},
		{"a field the page's form shows as a card is hidden whatever its name", "", "x9=1234&fullname=Ana", "[Card (x9)=hidden Full name (fullname)=Ana]",
			map[string]heldLabel{"x9": {label: "Card", secret: true}, "fullname": {label: "Full name"}}},
		{"a field the form lacks is shown by its name", "", "fullname=Ana&extra=1", "[Full name (fullname)=Ana extra=1]",
			map[string]heldLabel{"fullname": {label: "Full name"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range preview(&proxy.Held{Method: "POST", URL: "http://x/y", ContentType: c.ct, Body: []byte(c.body)}, c.labels) {
				if f.Label != "" {
					got = append(got, f.Label+" ("+f.Name+")="+f.Value)
				} else {
					got = append(got, f.Name+"="+f.Value)
				}
			}
			if s := fmt.Sprint(got); s != c.want {
				t.Errorf("preview(%q):\n\tgot  %s\n\twant %s", c.body, s, c.want)
			}
		})
	}
}

// TestApprovalPage: the approval page shows a held write's method, origin, path, fields (by the
// labels of the page's form) and digest, escapes what the page chose (a label and a field name
// with markup), and carries a viewport so it
// reads at a phone's width. With $BROWSER_AGENT_SCREENSHOTS set to a folder it also writes the
// page's screenshots at 1280 and 390 px (docs/images), taken by the system's headless Chromium.
func TestApprovalPage(t *testing.T) {
	a, err := startApprovals("127.0.0.1:0", time.Minute, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	body := "fullname=Ana+Lima&seats=2&meal=vegetarian&%3Cb%3Enote%3C%2Fb%3E=window+seat%2C+please"
	h := &proxy.Held{Method: "POST", URL: "https://trips.example/booking/details", ContentType: "application/x-www-form-urlencoded", Body: []byte(body)}
	h.Digest = proxy.Digest(h.Method, h.URL, h.Body)
	// The page's form, as the guard read it before the click: labels for three of the fields.
	a.forms = []pageForm{{Action: "https://trips.example/booking/details", Method: "POST", Fields: []formField{
		{Name: "fullname", Label: "Full name"}, {Name: "seats", Label: "Seats"}, {Name: "meal", Label: "Meal <choose>"},
	}}}
	done := make(chan string, 1)
	go func() { done <- a.hold(context.Background(), h) }()
	var page string
	testutil.Eventually(10*time.Second, func() bool { page = get(t, a.url); return strings.Contains(page, "Hold 1") })
	for _, want := range []string{
		`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		`Hold 1: <span class="m">POST</span> https://trips.example/booking/details`,
		`<th>Full name <span class="n">(fullname)</span></th><td>Ana Lima</td>`,
		`<th>Meal &lt;choose&gt; <span class="n">(meal)</span></th><td>vegetarian</td>`,
		`<th>&lt;b&gt;note&lt;/b&gt;</th><td>window seat, please</td>`,
		h.Digest,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the approval page lacks %q:\n%s", want, page)
		}
	}
	if dir := os.Getenv("BROWSER_AGENT_SCREENSHOTS"); dir != "" {
		for _, w := range []struct {
			file string
			size string
		}{{"guard-approval-1280.png", "1280,900"}, {"guard-approval-390.png", "390,844"}} {
			cmd := exec.Command(testbrowser.Chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
				"--screenshot="+filepath.Join(dir, w.file), "--window-size="+w.size, a.url)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("screenshot %s: %v\n%s", w.file, err, out)
			}
		}
	}
	a.mu.Lock()
	a.pending[1].answer <- "refused by a person"
	a.mu.Unlock()
	if why := <-done; why != "refused by a person" {
		t.Errorf("hold: %q, want the refusal", why)
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestLabelsFor: the labels come from the form whose method and action (canonical: case of the
// host, default port) are the held request's; a form of another action or method gives none; a
// field the page's form shows as a credential or card is secret whatever its name.
func TestLabelsFor(t *testing.T) {
	forms := []pageForm{
		{Action: "https://trips.example/search", Method: "POST", Fields: []formField{{Name: "to", Label: "Other form"}}},
		{Action: "https://trips.example/details", Method: "GET", Fields: []formField{{Name: "to", Label: "A GET form"}}},
		{Action: "https://Trips.Example:443/details", Method: "POST", Fields: []formField{
			{Name: "to", Label: "To"},
			{Name: "x9", Label: "Card", Control: field{Control: bridge.Control{Tag: "input", Type: "text", Autocomplete: "cc-number"}}},
			{Name: "p", Label: "Secret", Control: field{Control: bridge.Control{Tag: "input", Type: "password"}}},
		}},
	}
	got := labelsFor(forms, &proxy.Held{Method: "POST", URL: "https://trips.example/details"})
	want := map[string]heldLabel{"to": {label: "To"}, "x9": {label: "Card", secret: true}, "p": {label: "Secret", secret: true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labelsFor:\n\tgot  %v\n\twant %v", got, want)
	}
	if got := labelsFor(forms, &proxy.Held{Method: "PUT", URL: "https://trips.example/details"}); got != nil {
		t.Errorf("labelsFor a PUT no form sends: got %v, want none", got)
	}
}

// TestHoldEvents: each way a hold ends leaves its audit rows, metadata only: approved (and
// released), refused by a person, no answer in time, the request gone; a write to a payment
// origin or carrying a card is refused unoffered with a row of its own. No row holds a body value.
func TestHoldEvents(t *testing.T) {
	a, err := startApprovals("127.0.0.1:0", time.Minute, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	a.payments = []string{"https://pay.example"}
	const value = "Quux-Value-77"
	held := func(url, body string) *proxy.Held {
		h := &proxy.Held{Method: "POST", URL: url, Body: []byte(body)}
		h.Digest = proxy.Digest(h.Method, h.URL, h.Body)
		return h
	}
	answer := func(id int, why string) {
		testutil.Eventually(10*time.Second, func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			if p := a.pending[id]; p != nil {
				p.answer <- why
				return true
			}
			return false
		})
	}
	for _, c := range []struct {
		name  string
		run   func() string
		rules []string
	}{
		{"approved", func() string {
			a.timeout = time.Minute
			go answer(1, "")
			return a.hold(context.Background(), held("https://trips.example/a", "who="+value))
		}, []string{RuleHold, RuleHoldApproved, RuleHoldRelease}},
		{"refused", func() string {
			go answer(2, "refused by a person")
			return a.hold(context.Background(), held("https://trips.example/b", "who="+value))
		}, []string{RuleHold, RuleHoldRefused}},
		{"no answer", func() string {
			a.timeout = 50 * time.Millisecond // no one answers: the wait's length does not matter
			return a.hold(context.Background(), held("https://trips.example/c", "who="+value))
		},
			[]string{RuleHold, RuleHoldTimeout}},
		{"request gone", func() string {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return a.hold(ctx, held("https://trips.example/d", "who="+value))
		}, []string{RuleHold, RuleHoldTimeout}},
		{"payment origin", func() string { return a.hold(context.Background(), held("https://pay.example/charge", "who="+value)) },
			[]string{RulePayment}},
		{"card number", func() string {
			return a.hold(context.Background(), held("https://trips.example/e", "who="+value+"&n=4111111111111111"))
		}, []string{RuleHoldRefused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := c.run()
			var rules []string
			for _, e := range a.takeEvents() {
				rules = append(rules, e.kind)
				if strings.Contains(e.reason, value) || strings.Contains(e.reason, "4111") {
					t.Errorf("row %s holds a body value: %q", e.kind, e.reason)
				}
			}
			if fmt.Sprint(rules) != fmt.Sprint(c.rules) {
				t.Errorf("rows:\n\tgot  %v\n\twant %v (the hold answered %q)", rules, c.rules, why)
			}
			if (why == "") != (c.name == "approved") {
				t.Errorf("the hold answered %q", why)
			}
		})
	}
}
