package bridge

import (
	"fmt"
	"strings"
	"unicode"
)

// credentialAutocomplete are autocomplete tokens that mark a credential field; any cc-* token does
// too.
var credentialAutocomplete = map[string]bool{
	"current-password": true, "new-password": true, "one-time-code": true,
}

// credentialPhrases mark a field by its label, name, id, placeholder, aria-label or title. They
// are matched on the normalized text (lower case, camelCase and punctuation split into words).
var credentialPhrases = []string{
	"password", "passwd", "passcode", "pass code", "passphrase", "passwort", "kennwort", "contrasena",
	"contraseña", "mot de passe", "senha",
	"verification code", "one time code", "onetime code", "otp code", "auth code", "authentication code",
	"security code", "card number", "cardnumber", "credit card", "debit card", "cc number",
	"ccnumber", "cc num", "card verification",
}

// credentialWords are matched as whole words only.
var credentialWords = map[string]bool{
	"pwd": true, "otp": true, "totp": true, "2fa": true, "ccn": true,
	"cvv": true, "cvc": true, "cvv2": true, "cvc2": true, "csc": true,
}

// nonTextInputs are input types a person cannot type a secret into.
var nonTextInputs = map[string]bool{
	"hidden": true, "submit": true, "button": true, "reset": true, "image": true, "checkbox": true,
	"radio": true, "file": true, "range": true, "color": true,
}

// findCredential walks a DOM tree (closed shadow roots and same-process frame documents included)
// and returns why it holds a credential field, or "". It reads attributes and label text, never a
// field's value.
func findCredential(root *cdpNode) string {
	var why string
	var scope func(n *cdpNode) // one tree scope: a document or a shadow root
	scope = func(sroot *cdpNode) {
		ids := map[string]*cdpNode{}
		var labels []*cdpNode
		type control struct {
			n      *cdpNode
			labels []*cdpNode // ancestor label elements
		}
		var controls []control
		var nested []*cdpNode
		var walk func(n *cdpNode, ancestors []*cdpNode)
		walk = func(n *cdpNode, ancestors []*cdpNode) {
			if n.NodeType == 1 {
				if id := n.attr("id"); id != "" {
					if _, dup := ids[id]; !dup {
						ids[id] = n
					}
				}
				switch n.LocalName {
				case "label":
					labels = append(labels, n)
					ancestors = append(ancestors[:len(ancestors):len(ancestors)], n)
				case "input", "textarea", "select":
					controls = append(controls, control{n, ancestors})
				}
				for _, sr := range n.ShadowRoots {
					if sr.ShadowRootType != "user-agent" {
						nested = append(nested, sr)
					}
				}
				if n.ContentDocument != nil {
					nested = append(nested, n.ContentDocument)
				}
			}
			for _, c := range n.Children {
				walk(c, ancestors)
			}
		}
		walk(sroot, nil)
		for _, c := range controls {
			var texts []string
			for _, l := range c.labels {
				texts = append(texts, textContent(l, 500))
			}
			if id := c.n.attr("id"); id != "" {
				for _, l := range labels {
					if l.attr("for") == id {
						texts = append(texts, textContent(l, 500))
					}
				}
			}
			for _, ref := range strings.Fields(c.n.attr("aria-labelledby")) {
				if l := ids[ref]; l != nil {
					texts = append(texts, textContent(l, 500))
				}
			}
			if w := credentialControl(c.n, texts); w != "" && why == "" {
				why = w
			}
		}
		for _, n := range nested {
			if why != "" {
				return
			}
			scope(n)
		}
	}
	scope(root)
	return why
}

// credentialControl says why one control is a credential field, or "".
func credentialControl(n *cdpNode, labelTexts []string) string {
	typ := strings.ToLower(strings.TrimSpace(n.attr("type")))
	if n.LocalName == "input" && typ == "password" {
		return "password input"
	}
	for _, tok := range strings.Fields(strings.ToLower(n.attr("autocomplete"))) {
		if credentialAutocomplete[tok] || strings.HasPrefix(tok, "cc-") {
			return fmt.Sprintf("%s field with autocomplete %s", n.LocalName, tok)
		}
	}
	if n.LocalName == "select" || (n.LocalName == "input" && nonTextInputs[typ]) {
		return ""
	}
	texts := append([]string{n.attr("name"), n.attr("id"), n.attr("placeholder"), n.attr("aria-label"), n.attr("title")}, labelTexts...)
	for _, t := range texts {
		if p := credentialText(t); p != "" {
			return fmt.Sprintf("%s field labelled %q", n.LocalName, p)
		}
	}
	return ""
}

// credentialText returns the credential phrase t holds, or "".
func credentialText(t string) string {
	if t == "" {
		return ""
	}
	norm := " " + normalizeWords(t) + " "
	for _, p := range credentialPhrases {
		if strings.Contains(norm, p) {
			return p
		}
	}
	for _, w := range strings.Fields(norm) {
		if credentialWords[w] {
			return w
		}
	}
	return ""
}

// normalizeWords lower-cases t and splits camelCase and punctuation into single spaces:
// "cardNumber" and "card_number" both become "card number".
func normalizeWords(t string) string {
	var b strings.Builder
	var prev rune
	space := true
	for _, r := range t {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
			b.WriteRune(unicode.ToLower(r))
			space = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			space = false
		default:
			if !space {
				b.WriteByte(' ')
				space = true
			}
		}
		prev = r
	}
	return strings.TrimSpace(b.String())
}

// textContent concatenates the text of n's subtree, up to max bytes.
func textContent(n *cdpNode, max int) string {
	var b strings.Builder
	var walk func(n *cdpNode)
	walk = func(n *cdpNode) {
		if b.Len() >= max {
			return
		}
		if n.NodeType == 3 {
			b.WriteString(n.NodeValue)
			b.WriteByte(' ')
		}
		for _, c := range n.Children {
			walk(c)
		}
		for _, sr := range n.ShadowRoots {
			if sr.ShadowRootType != "user-agent" {
				walk(sr)
			}
		}
	}
	walk(n)
	return b.String()
}
