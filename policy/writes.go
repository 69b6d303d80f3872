package policy

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultWriteWords are the words that make a URL a write, wherever they stand in its path or query.
var DefaultWriteWords = []string{
	"delete", "del", "remove", "rm", "destroy", "purge", "erase", "drop", "truncate", "wipe",
	"edit", "update", "modify", "change", "patch", "put", "post", "write",
	"create", "new", "add", "insert", "append", "submit", "save", "upload", "import", "publish",
	"logout", "logoff", "signout", "unsubscribe", "subscribe", "cancel", "approve", "reject", "confirm",
	"pay", "payment", "checkout", "buy", "purchase", "order", "transfer", "send", "refund", "withdraw",
	"reset", "revoke", "grant", "invite", "register", "signup", "enroll", "archive", "restore",
	"disable", "enable", "activate", "deactivate", "suspend", "block", "ban", "kill", "execute", "exec",
	"move", "rename", "merge", "assign",
}

// maxDecodeRounds bounds how often a segment is percent-decoded when looking for write words, so
// that "%2564elete" (decoded twice by some servers) is still seen as "delete".
const maxDecodeRounds = 4

// findWriteWord returns the first write word found in u's path segments, query names or query
// values, and where it was found ("path", "query name", "query value").
func (p *Policy) findWriteWord(u *URL) (word, where string) {
	return p.findWriteWordSegs(u, splitPath(u.Path()))
}

// findWriteWordSegs is findWriteWord for a URL whose path the caller has already split.
func (p *Policy) findWriteWordSegs(u *URL, segs []string) (word, where string) {
	for _, seg := range segs {
		if w := p.writeWordIn(seg); w != "" {
			return w, "path"
		}
	}
	q := u.RawQuery()
	if q == "" {
		return "", ""
	}
	for pair := range strings.SplitSeq(q, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if w := p.writeWordIn(strings.ReplaceAll(name, "+", " ")); w != "" {
			return w, "query name"
		}
		if w := p.writeWordIn(strings.ReplaceAll(value, "+", " ")); w != "" {
			return w, "query value"
		}
	}
	return "", ""
}

// writeWordIn checks s and each of its percent-decodings for a write word.
func (p *Policy) writeWordIn(s string) string {
	for range maxDecodeRounds {
		if w := p.writeWordInWords(s); w != "" {
			return w
		}
		if strings.IndexByte(s, '%') < 0 {
			break // nothing to decode: the next round would see the same string
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			// A stray % is not an escape; decode what can be decoded.
			d = lenientUnescape(s)
		}
		if d == s {
			break
		}
		s = d
	}
	return ""
}

// writeWordInWords returns the first of words(s) that is a write word. For ASCII s (nearly every
// URL) it splits and lower-cases in place, with words' exact rules and without allocating.
func (p *Policy) writeWordInWords(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			for _, w := range words(s) {
				if p.writeWords[w] {
					return w
				}
			}
			return ""
		}
	}
	var buf [64]byte
	check := func(start, end int) string {
		if start < 0 || end <= start {
			return ""
		}
		if end-start > len(buf) {
			if w := strings.ToLower(s[start:end]); p.writeWords[w] {
				return w
			}
			return ""
		}
		b := buf[:end-start]
		for i := range b {
			c := s[start+i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		if p.writeWords[string(b)] { // no allocation for a map lookup
			return strings.ToLower(s[start:end])
		}
		return ""
	}
	start := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) {
			if w := check(start, i); w != "" {
				return w
			}
			start = -1
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := s[i-1]
		split := false
		switch {
		case isDigit(c) != isDigit(prev):
			split = true
		case isUpper(c) && isLower(prev):
			split = true
		case isUpper(c) && isUpper(prev) && i+1 < len(s) && isLower(s[i+1]):
			split = true
		}
		if split {
			if w := check(start, i); w != "" {
				return w
			}
			start = i
		}
	}
	return check(start, len(s))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }

// lenientUnescape decodes every valid %XX escape and leaves the rest as is, like a browser or a
// forgiving server would.
func lenientUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// words splits s on every character that is not a letter or digit, on changes between letters
// and digits, and on case changes ("deleteAll" → delete, all; "XMLHttp" → xml, http), and
// lower-cases the result.
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsDigit(r) != unicode.IsDigit(prev):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}
