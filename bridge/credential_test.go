package bridge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// TestCredentialWithheld opens pages that hold a credential field somewhere: main frame, frames
// of the same and of another site (out of process), open and closed shadow roots. Each page is
// withheld whole: Open returns only URL and Status, and Read, Links, Fields and Screenshot fail
// with ErrCredentialRequired.
func TestCredentialWithheld(t *testing.T) {
	t.Parallel()
	variants := []string{
		"password", "hidden-password", "fresh-pw", "otp", "cc", "cc-exp-select", "label-for",
		"wrapping-label", "labelledby", "placeholder", "name-cvv", "camel", "aria", "id-pwd", "textarea",
		"same-frame", "cross-frame", "nested-frame", "hidden-frame", "cross-closed-shadow",
		"open-shadow", "closed-shadow", "nested-shadow",
		// Named only by what a person sees, or by the signals of a code.
		"code-label", "named-field", "ce-aria", "ce-plaintext", "shy-masked", "shy-plain", "masked-only",
		"before-label", "before-near", "attr-before", "zero-width", "cyrillic", "greek-leet", "spaced",
		"digits", "digit-boxes", "role-textbox", "ce-readonly", "describedby", "german", "french", "spanish", "russian",
		"shadow-label",
	}
	s := newSession(t)
	for _, v := range variants {
		t.Run(v, func(t *testing.T) {
			k := newKey()
			url := fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, k, v)
			p, err := s.Open(ctxT(t), url)
			if !errors.Is(err, ErrCredentialRequired) {
				t.Fatalf("Open(%s): got err %v, want ErrCredentialRequired", v, err)
			}
			if want := (Page{URL: url, Status: 200}); fmt.Sprint(p) != fmt.Sprint(want) {
				t.Errorf("Open(%s):\n\tgot  %+v\n\twant %+v", v, p, want)
			}
			// The error names the page and the field, in the bridge's words, never a value.
			ce, ok := errors.AsType[*CredentialError](err)
			if !ok || ce.URL != url || ce.Field == "" || strings.Contains(ce.Field, "hunter2") {
				t.Errorf("Open(%s): got %#v, want a CredentialError for %s naming the field", v, ce, url)
			} else if want := credentialNamed[v]; want != "" && !strings.HasPrefix(ce.Field, want) {
				t.Errorf("Open(%s): field %q, want %q", v, ce.Field, want)
			}
			checkWithheld(t, s, v)
		})
	}
}

// credentialNamed is how the bridge names the field of some of cred.html's variants.
var credentialNamed = map[string]string{
	"password":    "input type=password",
	"otp":         "input type=text with autocomplete one-time-code",
	"cc":          "input type=text with autocomplete cc-number",
	"label-for":   "input type=text named by the words verification code",
	"placeholder": "input type=text named by the words card number",
	"masked-only": "input type=text with masked text",
}

func checkWithheld(t *testing.T, s *Session, v string) {
	t.Helper()
	if c, err := s.Read(ctxT(t), 0); !errors.Is(err, ErrCredentialRequired) || c.Text != "" {
		t.Errorf("Read(%s): got %q, %v, want ErrCredentialRequired", v, c.Text, err)
	} else if ce, ok := errors.AsType[*CredentialError](err); !ok || ce.URL == "" || ce.Field == "" {
		t.Errorf("Read(%s): got %v, want a CredentialError naming the page and the field", v, err)
	}
	if l, err := s.Links(ctxT(t)); !errors.Is(err, ErrCredentialRequired) || l != nil {
		t.Errorf("Links(%s): got %v, %v, want ErrCredentialRequired", v, l, err)
	}
	if f, err := s.Fields(ctxT(t)); !errors.Is(err, ErrCredentialRequired) || f != nil {
		t.Errorf("Fields(%s): got %v, %v, want ErrCredentialRequired", v, f, err)
	}
	if png, err := s.Screenshot(ctxT(t)); !errors.Is(err, ErrCredentialRequired) || png != nil {
		t.Errorf("Screenshot(%s): got %d bytes, %v, want ErrCredentialRequired", v, len(png), err)
	}
}

// TestCredentialLate checks fields added after load: the page is readable until the field
// appears (3 s after load, so that a loaded machine still opens it first), and withheld from
// then on.
func TestCredentialLate(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"late", "late-frame"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			s := newSession(t)
			if _, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, newKey(), v)); err != nil {
				t.Fatalf("Open(%s) before the field appears: %v", v, err)
			}
			// Wait for the field (at most 15 s), then every read must be withheld.
			testutil.Eventually(15*time.Second, func() bool {
				_, err := s.Read(ctxT(t), 0)
				return errors.Is(err, ErrCredentialRequired)
			})
			checkWithheld(t, s, v)
		})
	}
}

// TestCredentialLateTimer adds a password field and a text about recovery codes 200 and 600 ms
// after load: Open waits for the page's short timers (init.js), finds the field and returns
// nothing.
func TestCredentialLateTimer(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	for _, v := range []string{"late-200", "late-600"} {
		p, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, newKey(), v))
		if !errors.Is(err, ErrCredentialRequired) || p.Text != "" {
			t.Fatalf("Open(%s): got %q, %v, want ErrCredentialRequired", v, p.Text, err)
		}
		checkWithheld(t, s, v)
	}
}

// TestCredentialLateNetwork adds a credential field some time after a request the page makes at
// load has answered (a fetch, an XHR, a chain of fetches, a fetch in a frame), or only for an
// instant (net-flash). Each page shows its SECRET-NET text from the start: a read of it must not
// be handed over, since the page shows a credential field before the reads are over (the check
// after the read waits for the page's requests and the short timers they start, and the
// credential watch of init.js remembers a field that came and went, net-flash-blind in a closed
// shadow root after the page patched the DOM's prototypes and called every hidden global).
func TestCredentialLateNetwork(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	for _, v := range []string{"net-fetch", "net-xhr", "net-chain", "net-flash", "net-frame", "net-flash-blind"} {
		t.Run(v, func(t *testing.T) {
			p, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, newKey(), v))
			if strings.Contains(p.Text, "SECRET-NET") {
				t.Errorf("Open(%s) handed over the page's text before its late field: %q", v, p.Text)
			}
			if !errors.Is(err, ErrCredentialRequired) {
				t.Fatalf("Open(%s): got err %v, want ErrCredentialRequired", v, err)
			}
			checkWithheld(t, s, v)
		})
	}
}

// openReadable opens variant v of cred.html, a page with no credential field, and returns it;
// the page must open and hold each of want.
func openReadable(t *testing.T, s *Session, v string, want ...string) Page {
	t.Helper()
	p, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, newKey(), v))
	if err != nil {
		t.Fatalf("Open(%s): %v", v, err)
	}
	for _, w := range want {
		if !strings.Contains(p.Text, w) {
			t.Errorf("Open(%s): %q not in the text %q", v, w, p.Text)
		}
	}
	return p
}

// TestCredentialNetworkOrdinary is the negative control of the watch and the quiet: an ordinary
// page that shows what it fetched 300 ms after the fetch answered, an XHR's answer and a shadow
// root of its own is read whole (fetch, XHR and attachShadow work as without them), and the text
// the quiet waited for is in the first read.
func TestCredentialNetworkOrdinary(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	openReadable(t, s, "net-ordinary", "Loaded record: ORDINARY-ok", "XHR-ok", "SHADOW-ok", "Public text")
}

// TestReaderNoFieldText opens a page with editable elements that are not credential fields
// (contenteditable hosts, role=textbox, one in a closed shadow root) holding text: what they hold
// is a field's value, typed or planted, and never enters a read; the text around them does.
func TestReaderNoFieldText(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	p := openReadable(t, s, "field-text", "Text after the fields")
	fields, err := s.Fields(ctxT(t))
	if err != nil {
		t.Fatalf("Fields: %v", err)
	}
	links, err := s.Links(ctxT(t))
	if err != nil {
		t.Fatalf("Links: %v", err)
	}
	if all := p.Text + p.Heading + p.Title + fmt.Sprint(fields, links); strings.Contains(all, "SECRET-") {
		t.Errorf("a field's text reached the read: %q", all)
	}
}

// TestCredentialNone is the negative control: a search box, a hidden input and a checkbox whose
// names mention a password, a read-only role=textbox whose id holds "pw" (select2's choice), and
// the word in text, are not credential fields.
func TestCredentialNone(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	openReadable(t, s, "plain-fields", "Forgot your password?")
	p := openReadable(t, s, "none", "Forgot your password?")
	if strings.Contains(p.Text, "hunter2") {
		t.Errorf("a field value reached the text")
	}
	if png, err := s.Screenshot(ctxT(t)); err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("Screenshot: got %d bytes, %v, want a PNG", len(png), err)
	}
}

// TestCredentialField checks the decision on one editable element.
func TestCredentialField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    control
		want bool
	}{
		{"masked text input", control{Tag: "input", Type: "text", Masked: true}, true},
		{"otp boxes", control{Tag: "input", Type: "text", Pattern: "[0-9]", MaxLength: 1}, true},
		{"numeric six", control{Tag: "input", Type: "text", InputMode: "numeric", MaxLength: 6}, true},
		{"zip", control{Tag: "input", Type: "text", InputMode: "numeric", MaxLength: 5, Names: []string{"ZIP code"}}, false},
		{"search near password text", control{Tag: "input", Type: "search", Near: []string{"Forgot your password?"}}, false},
		{"text near password text", control{Tag: "input", Type: "text", Near: []string{"Password"}}, true},
		{"query named near password", control{Tag: "input", Type: "text", Names: []string{"Search records"}, Near: []string{"password"}}, false},
		{"checkbox named password", control{Tag: "input", Type: "checkbox", Names: []string{"remember_password"}}, false},
		{"contenteditable", control{Tag: "div", Names: []string{"Password"}}, true},
		{"comment", control{Tag: "div", Names: []string{"Comment"}}, false},
		{"quantity", control{Tag: "input", Type: "number", MaxLength: 3, Names: []string{"Quantity"}}, false},
		// select2's choice: a role=textbox span the page says is read-only, with two random letters in its id.
		{"read-only role textbox", control{Tag: "span", Role: "textbox", ReadOnly: true, Names: []string{"Alabama", "select2-state-pw-container"}}, false},
		{"role textbox", control{Tag: "span", Role: "textbox", Names: []string{"Alabama", "select2-state-pw-container"}}, true},
	}
	for _, tt := range tests {
		if got := credentialField(tt.c) != ""; got != tt.want {
			t.Errorf("credentialField(%s): got %v (%q), want %v", tt.name, got, credentialField(tt.c), tt.want)
		}
	}
}

// TestCredentialText checks the label heuristics alone.
func TestCredentialText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"password", "password"},
		{"New Password", "password"},
		{"user_pwd", "pwd"},
		{"cardNumber", "card number"},
		{"card-number", "card number"},
		{"CVV", "cvv"},
		{"Verification code", "verification code"},
		{"Enter the OTP", "otp"},
		{"Search records", ""},
		{"Postcode", ""},
		{"Passenger name", ""},
		{"Record ID", ""},
		{"Pass\u00adword", "password"},
		{"Pass\u200bw\u200dord", "password"},
		{"P\u0430ssw\u043erd", "password"}, // Cyrillic a and o
		{"\u03a1assw0rd", "password"},      // Greek Rho, digit zero
		{"P a s s w o r d", "password"},
		{"ＰＡＳＳＷＯＲＤ", "password"}, // full width
		{"Enter the 6-digit code we sent to your phone", "digit code"},
		{"PIN", "pin"},
		{"Kennwort", "kennwort"},
		{"Contraseña", "contrasena"},
		{"Mot de passe", "mot de passe"},
		{"Пароль", "пароль"},
		{"Spinner speed", ""},
		{"Compass heading", ""},
		{"Search", ""},
	}
	for _, tt := range tests {
		if got := credentialText(tt.in); got != tt.want {
			t.Errorf("credentialText(%q):\n\tgot  %q\n\twant %q", tt.in, got, tt.want)
		}
	}
}

// TestCredentialNeverRendered opens a page whose scripts create editable elements, password
// fields among them, and remove them in the same task (in the document, a closed shadow root and
// a frame; at parse time and when a fetch answers), as jQuery 1-3's selector engine does at load:
// no frame ever rendered them, nobody could meet them, and the page is read. Its twin,
// TestCredentialOneFrame, shows the same fields for one frame and must be withheld.
func TestCredentialNeverRendered(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	openReadable(t, s, "never-rendered", "NEVER-RENDERED-ok", "Public text")
	if _, err := s.Read(ctxT(t), 0); err != nil {
		t.Errorf("Read after the fetch's fields: %v", err)
	}
}

// TestCredentialOneFrame shows a credential field for one rendered frame and removes it: a
// password input, a text input masked by style in a closed shadow root, a one-time-code input in
// a frame. A person could have met each, so each page is withheld.
func TestCredentialOneFrame(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	for _, v := range []string{"one-frame", "one-frame-masked", "one-frame-frame"} {
		t.Run(v, func(t *testing.T) {
			p, err := s.Open(ctxT(t), fmt.Sprintf("%s/p/%s/cred.html?v=%s", testFix.Site, newKey(), v))
			if strings.Contains(p.Text, "SECRET-NET") {
				t.Errorf("Open(%s) handed over the page's text: %q", v, p.Text)
			}
			if !errors.Is(err, ErrCredentialRequired) {
				t.Fatalf("Open(%s): got err %v, want ErrCredentialRequired", v, err)
			}
			checkWithheld(t, s, v)
		})
	}
}
