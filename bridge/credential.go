package bridge

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Credential detection. A page is withheld when it holds an editable thing a person would call a
// credential field: a password, a one-time or security code, a PIN, a card number. The reader
// (js/reader/10_controls.js) reports every editable element of a frame (inputs of text-like types, textarea,
// select, contenteditable hosts, role=textbox) with the names a person and assistive technology
// see (aria-label, aria-labelledby, aria-describedby, <label>, placeholder, title, the rendered
// text just before it, CSS generated content included) and its name, id, autocomplete, inputmode,
// maxlength, pattern and whether its text is masked (-webkit-text-security). It reports them in the
// same synchronous evaluation that reads the frame's text, and never a field's value.
//
// Names are normalised before matching (normalizeName): compatibility forms folded (NFKC), marks
// and format characters (soft hyphen, zero-width characters) dropped, Cyrillic and Greek look-alike
// letters mapped to Latin. Languages covered: English, German, French, Spanish, Portuguese,
// Italian, Dutch and Russian.

// control is one editable element as the reader reports it: never its value.
type control struct {
	Tag          string `json:"tag"`
	Type         string `json:"type"`
	Role         string `json:"role"`
	Autocomplete string `json:"autocomplete"`
	InputMode    string `json:"inputmode"`
	Pattern      string `json:"pattern"`
	MaxLength    int    `json:"maxlength"`
	Masked       bool   `json:"masked"`
	// ReadOnly: an element that is a field only because its role says textbox, which the page
	// also declares read-only (aria-readonly=true) and the browser does not make editable (no
	// contenteditable). Nobody can type into it: select2 shows a choice in one, whose id carries
	// two random letters ("select2-state-pw-container" named a sign-in field one load in 1,296).
	// Taking the page's word here opens nothing: a page that wants its field unseen can leave the
	// role out, and a script-driven box without one is no field to the reader either.
	ReadOnly bool     `json:"readonly"`
	Names    []string `json:"names"` // accessible names and descriptions, name, id, placeholder, title
	Near     []string `json:"near"`  // rendered text just before the element
}

// credentialAutocomplete are autocomplete tokens that mark a credential field; any cc-* token does
// too.
var credentialAutocomplete = map[string]bool{
	"current-password": true, "new-password": true, "one-time-code": true,
}

// credentialPhrases mark a field by its names. They are matched on the normalised text (lower
// case, marks dropped, look-alikes mapped, camelCase and punctuation split into words).
var credentialPhrases = []string{
	// passwords
	"password", "passwd", "passcode", "pass code", "passphrase", "pass phrase", "passwort", "kennwort",
	"contrasena", "clave de acceso", "mot de passe", "senha", "palavra passe", "parola d accesso",
	"wachtwoord", "wachtwort", "пароль",
	// one-time and security codes
	"verification code", "one time code", "onetime code", "one time password", "otp code", "auth code",
	"authentication code", "authenticator", "security code", "access code", "login code", "sign in code",
	"signin code", "confirmation code", "recovery code", "backup code", "digit code", "code we sent",
	"code sent to", "code we texted", "sms code", "two factor", "2 step", "two step", "2 factor",
	"bestatigungscode", "sicherheitscode", "verifizierungscode", "einmalcode", "code de verification",
	"code de securite", "code de confirmation", "codigo de verificacion", "codigo de seguridad",
	"codigo de seguranca", "codice di verifica", "codice di sicurezza", "verificatiecode",
	"beveiligingscode", "код подтверждения", "pin code", "pincode", "geheimzahl",
	// cards
	"card number", "cardnumber", "credit card", "debit card", "cc number", "ccnumber", "cc num",
	"card verification", "kartennummer", "numero de carte", "numero de tarjeta", "numero do cartao",
	"numero della carta", "kaartnummer", "номер карты",
}

// credentialCompact are phrases also matched with all spaces removed, so that letter-spaced or
// camelCase-split text ("P a s s w o r d", "PassWord") is caught.
var credentialCompact = []string{
	"password", "passwort", "passcode", "passphrase", "kennwort", "contrasena", "motdepasse",
	"wachtwoord", "onetimecode", "onetimepassword", "verificationcode", "securitycode", "cardnumber",
	"creditcard", "пароль",
}

// credentialWords are matched as whole words only.
var credentialWords = map[string]bool{
	"pwd": true, "pw": true, "otp": true, "totp": true, "2fa": true, "mfa": true, "ccn": true, "pin": true,
	"cvv": true, "cvc": true, "cvv2": true, "cvc2": true, "csc": true,
}

// notCodeWords name short numeric fields that are not secrets.
var notCodeWords = []string{"zip", "postal", "postcode", "post code", "plz", "year", "age", "quantity",
	"qty", "amount", "count", "number of", "page", "day", "month", "phone", "telephone"}

// searchWords mark a field meant for a query; its nearby text is not used to name it.
var searchWords = []string{"search", "query", "find", "suche", "suchen", "buscar", "rechercher", "cerca", "zoeken", "поиск"}

// nonTextInputs are input types a person cannot type a secret into.
var nonTextInputs = map[string]bool{
	"hidden": true, "submit": true, "button": true, "reset": true, "image": true, "checkbox": true,
	"radio": true, "file": true, "range": true, "color": true,
}

// credentialField says why one editable element is a credential field, or "": the field (its
// kind, its input type) and the signal that named it (the type, an autocomplete token, masked
// text, the credential words of its names or of the text before it, the shape of a code). The
// sentence is made only of this package's own words (fieldKind, the input types and autocomplete
// tokens HTML defines, the phrases above), never of a value or of other text the page chose: it is
// shown to a person and kept in the audit.
func credentialField(c control) string {
	tag := strings.ToLower(c.Tag)
	typ := strings.ToLower(strings.TrimSpace(c.Type))
	field := fieldKind(tag, typ)
	if tag == "input" && typ == "password" {
		return field
	}
	for _, tok := range strings.Fields(strings.ToLower(c.Autocomplete)) {
		if credentialAutocomplete[tok] || strings.HasPrefix(tok, "cc-") {
			return fmt.Sprintf("%s with autocomplete %s", field, autocompleteToken(tok))
		}
	}
	if tag == "input" && nonTextInputs[typ] || c.ReadOnly {
		return ""
	}
	if c.Masked {
		return field + " with masked text"
	}
	search := typ == "search" || strings.EqualFold(c.Role, "searchbox")
	for _, t := range c.Names {
		if p := credentialText(t); p != "" {
			return fmt.Sprintf("%s named by the words %s", field, p)
		}
		if hasAny(normalizeName(t), searchWords) {
			search = true
		}
	}
	if !search {
		for _, t := range c.Near {
			if p := credentialText(t); p != "" {
				return fmt.Sprintf("%s after the words %s", field, p)
			}
		}
	}
	if codeShaped(c, typ) {
		for _, t := range c.Names {
			if hasAny(normalizeName(t), notCodeWords) {
				return ""
			}
		}
		return field + " shaped like a short numeric code"
	}
	return ""
}

// inputTypes are the input types HTML defines; any other is read as text, as browsers do.
var inputTypes = map[string]bool{
	"text": true, "password": true, "email": true, "tel": true, "url": true, "search": true, "number": true,
	"date": true, "datetime-local": true, "month": true, "week": true, "time": true, "hidden": true,
	"submit": true, "button": true, "reset": true, "image": true, "checkbox": true, "radio": true,
	"file": true, "range": true, "color": true,
}

// ccTokens are the autocomplete tokens HTML defines for payment cards.
var ccTokens = map[string]bool{
	"cc-name": true, "cc-given-name": true, "cc-additional-name": true, "cc-family-name": true,
	"cc-number": true, "cc-exp": true, "cc-exp-month": true, "cc-exp-year": true, "cc-csc": true, "cc-type": true,
}

// fieldKind names a field by its element and input type in this package's words: "input
// type=password", "textarea", "select", "editable element" (a contenteditable host or a
// role=textbox; its tag may be any name the page chose).
func fieldKind(tag, typ string) string {
	switch tag {
	case "input":
		if !inputTypes[typ] {
			typ = "text"
		}
		return "input type=" + typ
	case "textarea", "select":
		return tag
	}
	return "editable element"
}

// autocompleteToken is tok when HTML defines it, else "cc-*" (a cc- token of the page's own).
func autocompleteToken(tok string) string {
	if credentialAutocomplete[tok] || ccTokens[tok] {
		return tok
	}
	return "cc-*"
}

// codeShaped reports the signals of a one-time code or PIN: a numeric field (inputmode, type or a
// digits-only pattern) of at most 8 characters (maxlength or the pattern's count).
func codeShaped(c control, typ string) bool {
	if c.Tag != "input" && c.Tag != "" {
		if !(strings.EqualFold(c.InputMode, "numeric") || strings.EqualFold(c.InputMode, "decimal")) {
			return false
		}
	}
	p := strings.ReplaceAll(c.Pattern, " ", "")
	digitsPattern := p != "" && (strings.Contains(p, `\d`) || strings.Contains(p, "[0-9]")) &&
		!strings.ContainsAny(strings.ReplaceAll(strings.ReplaceAll(p, `\d`, ""), "[0-9]", ""), "azAZ.*+")
	numeric := strings.EqualFold(c.InputMode, "numeric") || strings.EqualFold(c.InputMode, "decimal") ||
		typ == "number" || typ == "tel" || digitsPattern
	if !numeric {
		return false
	}
	if c.MaxLength > 0 && c.MaxLength <= 8 {
		return true
	}
	if digitsPattern {
		// {n} or {m,n} with n <= 8
		if i := strings.LastIndexByte(p, '{'); i >= 0 {
			if j := strings.IndexByte(p[i:], '}'); j > 0 {
				parts := strings.Split(p[i+1:i+j], ",")
				if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil && n <= 8 {
					return true
				}
			}
		}
	}
	return false
}

// credentialText returns the credential phrase t holds, or "".
func credentialText(t string) string {
	if t == "" {
		return ""
	}
	n := normalizeName(t)
	for _, v := range []string{n, unLeet(n)} {
		padded := " " + v + " "
		for _, p := range credentialPhrases {
			if strings.Contains(padded, " "+p+" ") || (len(p) >= 7 && strings.Contains(padded, " "+p)) {
				return p
			}
		}
		compact := strings.ReplaceAll(v, " ", "")
		for _, p := range credentialCompact {
			if strings.Contains(compact, p) {
				return p
			}
		}
		for _, w := range strings.Fields(v) {
			if credentialWords[w] {
				return w
			}
		}
	}
	return ""
}

func hasAny(n string, words []string) bool {
	padded := " " + n + " "
	for _, w := range words {
		if strings.Contains(padded, " "+w+" ") || strings.Contains(padded, " "+w) {
			return true
		}
	}
	return false
}

// unLeet reads digits inside words as the letters they stand for ("passw0rd", "p4ssword").
func unLeet(n string) string {
	words := strings.Fields(n)
	for i, w := range words {
		letters := strings.IndexFunc(w, unicode.IsLetter) >= 0
		if !letters {
			continue
		}
		words[i] = strings.Map(func(r rune) rune {
			switch r {
			case '0':
				return 'o'
			case '1':
				return 'l'
			case '3':
				return 'e'
			case '4':
				return 'a'
			case '5':
				return 's'
			case '7':
				return 't'
			}
			return r
		}, w)
	}
	return strings.Join(words, " ")
}

// confusables maps Cyrillic and Greek letters that look like Latin ones to those.
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c',
	'т': 't', 'у': 'y', 'х': 'x', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	'ɑ': 'a', 'ɡ': 'g', 'ı': 'i', 'ʏ': 'y',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T',
	'У': 'Y', 'Х': 'X', 'І': 'I', 'Ј': 'J', 'Ѕ': 'S', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W',
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'ω': 'w', 'ς': 's',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
}

// normalizeName folds t to the words a person reads: NFKD (so compatibility forms and accents
// decompose), marks and format characters (soft hyphen, zero-width space and joiners, BOM)
// dropped, look-alike letters mapped to Latin (only in words that also hold Latin letters, so that
// Russian stays Russian), lower case, camelCase and punctuation split into single spaces:
// "cardNumber", "card_number" and "Pass\u00adword" become "card number", "card number", "password".
func normalizeName(t string) string {
	t = norm.NFKD.String(t)
	var b strings.Builder
	for _, r := range t {
		if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Cf, r) || r == '\u034f' {
			continue
		}
		b.WriteRune(r)
	}
	words := strings.FieldsFunc(b.String(), func(r rune) bool { return unicode.IsSpace(r) })
	for i, w := range words {
		latin := false
		for _, r := range w {
			if r < 0x250 && unicode.IsLetter(r) {
				latin = true
				break
			}
		}
		if latin {
			words[i] = strings.Map(func(r rune) rune {
				if m, ok := confusables[r]; ok {
					return m
				}
				return r
			}, w)
		} else if allConfusable(w) {
			words[i] = strings.Map(func(r rune) rune { return confusables[r] }, w)
		}
	}
	return normalizeWords(strings.Join(words, " "))
}

// allConfusable reports whether every letter of w has a Latin look-alike (a word like "рassсоdе"
// written only in look-alikes still reads as Latin; "пароль" does not).
func allConfusable(w string) bool {
	n := 0
	for _, r := range w {
		if !unicode.IsLetter(r) {
			continue
		}
		if _, ok := confusables[r]; !ok {
			return false
		}
		n++
	}
	return n > 0
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

// findCredential walks a DOM tree as DOM.getDocument(pierce) returns it (closed shadow roots and
// same-process frame documents included) and returns why it holds a credential field, or "". It is
// the second net under the reader's check: it sees attributes and label text but no styles. It
// never reads a field's value.
func findCredential(root *cdpNode) string {
	var why string
	var scope func(n *cdpNode) // one tree scope: a document or a shadow root
	scope = func(sroot *cdpNode) {
		ids := map[string]*cdpNode{}
		var labels []*cdpNode
		type ctl struct {
			n        *cdpNode
			labels   []*cdpNode // ancestor label elements
			readOnly bool       // control's ReadOnly
		}
		var controls []ctl
		var nested []*cdpNode
		var walk func(n *cdpNode, ancestors []*cdpNode, editable bool)
		walk = func(n *cdpNode, ancestors []*cdpNode, editable bool) {
			if n.NodeType == 1 {
				if id := n.attr("id"); id != "" {
					if _, dup := ids[id]; !dup {
						ids[id] = n
					}
				}
				ce := strings.ToLower(n.attr("contenteditable"))
				hasCE := n.hasAttr("contenteditable") && ce != "false"
				switch {
				case n.LocalName == "label":
					labels = append(labels, n)
					ancestors = append(ancestors[:len(ancestors):len(ancestors)], n)
				case n.LocalName == "input", n.LocalName == "textarea", n.LocalName == "select":
					controls = append(controls, ctl{n: n, labels: ancestors})
				case hasCE && !editable, strings.EqualFold(n.attr("role"), "textbox"):
					ro := !hasCE && !editable && strings.EqualFold(strings.TrimSpace(n.attr("aria-readonly")), "true")
					controls = append(controls, ctl{n, ancestors, ro})
				}
				if hasCE {
					editable = true
				} else if ce == "false" {
					editable = false
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
				walk(c, ancestors, editable)
			}
		}
		walk(sroot, nil, false)
		for _, c := range controls {
			var names []string
			for _, l := range c.labels {
				names = append(names, textContent(l, 500))
			}
			if id := c.n.attr("id"); id != "" {
				for _, l := range labels {
					if l.attr("for") == id {
						names = append(names, textContent(l, 500))
					}
				}
			}
			for _, attr := range []string{"aria-labelledby", "aria-describedby"} {
				for _, ref := range strings.Fields(c.n.attr(attr)) {
					if l := ids[ref]; l != nil {
						names = append(names, textContent(l, 500))
					}
				}
			}
			for _, attr := range []string{"name", "id", "placeholder", "aria-label", "aria-placeholder", "title"} {
				names = append(names, c.n.attr(attr))
			}
			ml, _ := strconv.Atoi(strings.TrimSpace(c.n.attr("maxlength")))
			tag := c.n.LocalName
			if tag != "input" && tag != "textarea" && tag != "select" {
				tag = "editable"
			}
			w := credentialField(control{
				Tag: tag, Type: c.n.attr("type"), Role: c.n.attr("role"), Autocomplete: c.n.attr("autocomplete"),
				InputMode: c.n.attr("inputmode"), Pattern: c.n.attr("pattern"), MaxLength: ml, ReadOnly: c.readOnly,
				Names: names,
			})
			if w != "" && why == "" {
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
