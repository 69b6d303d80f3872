package policy

import (
	"bytes"
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
	// Added for state changes that need no delete word: a compromised or page-obeying model reached
	// a GET …/close, …/unpublish or …/purgeall on a wildcard route. Common read nouns (book, release,
	// commit, install, message) are left out: a policy's literal routes are held to these exactly.
	"close", "reopen", "unpublish", "hide", "unhide", "lock", "unlock", "mute", "unmute", "unfollow",
	"accept", "decline", "void", "revert", "rollback", "undo", "restart", "shutdown", "reboot",
	"redeem", "donate", "bid", "reserve", "unblock", "unban", "dismiss", "retract", "toggle",
	"upvote", "downvote", "pin", "unpin", "unstar", "vote",
}

// maxDecodeRounds bounds how often a segment is percent-decoded when looking for write words, so
// that "%2564elete" (decoded twice by some servers) is still seen as "delete". A segment that still
// holds an escape after this many decodings is treated as a write (EncodedBeyondLimit): no server
// decodes that often by accident, and what it hides cannot be checked.
const maxDecodeRounds = 4

// Write-word search modes: a whole word only; also a write word of six letters or more inside a
// word ("bulkdelete"), for the literals the policy itself wrote; and every stem (see isWriteToken),
// for the parts of a URL the policy left open.
const (
	wordExact = iota
	wordContained
	wordStem
)

// EncodedBeyondLimit is the "word" findWriteWord reports for a part of a URL still percent-encoded
// after maxDecodeRounds decodings.
const EncodedBeyondLimit = "(percent-encoded beyond 4 decodings)"

// nounLike are write words that begin or sit inside many nouns of ordinary read URLs ("exchange",
// "changelog", "orderly", "passport", "registry"): they are looked for as the word itself and its
// inflections ("changed", "ordering") only, not as a start or a part of another word.
var nounLike = map[string]bool{
	"change": true, "import": true, "register": true, "assign": true, "reserve": true, "archive": true,
	"restore": true, "invite": true, "append": true, "decline": true, "insert": true, "order": true,
	"upload": true, "publish": true, // "/wp-content/uploads/", "/published/"; "unpublish" is a word of its own
}

// findWriteWord returns the first write word found in u's path segments, query names or query
// values, and where it was found ("path", "query name", "query value"). It looks for words whole
// (see findWriteWordSegs) and, everywhere, for their stems (see isStemWrite).
func (p *Policy) findWriteWord(u *URL) (word, where string) {
	segs := splitPath(u.Path())
	if w, where := p.findWriteWordSegs(u, segs); w != "" {
		return w, where
	}
	return p.findStemWrite(u, segs, nil)
}

// findWriteWordSegs looks for whole write words in every path segment, query name and query value
// of a URL whose path the caller has already split.
func (p *Policy) findWriteWordSegs(u *URL, segs []string) (word, where string) {
	for _, seg := range segs {
		if w := p.writeWordIn(seg, wordExact); w != "" {
			return w, "path"
		}
	}
	return p.queryWriteWord(u.RawQuery(), wordExact, nil)
}

// findStemWrite looks for write stems ("deleteall", "removed", "purge_all", "unpublish") in the
// parts of a URL that the policy did not write itself: every path segment except those matched by
// a literal of the route r, every query value but those r writes as literals, and every query name
// r does not declare. A nil r exempts nothing.
func (p *Policy) findStemWrite(u *URL, segs []string, r *route) (word, where string) {
	for i, seg := range segs {
		mode := wordStem
		if r.literalAt(i) {
			mode = wordContained // the policy's own word: whole words and long ones inside it
		}
		if w := p.writeWordIn(seg, mode); w != "" {
			return w, "path"
		}
	}
	return p.queryWriteWord(u.RawQuery(), wordStem, r)
}

func (p *Policy) queryWriteWord(q string, mode int, r *route) (word, where string) {
	if q == "" {
		return "", ""
	}
	for pair := range strings.SplitSeq(q, "&") {
		name, value, _ := strings.Cut(pair, "=")
		nameMode := mode
		if mode == wordStem && r.declares(name) {
			nameMode = wordContained // a name the route declares is the policy's own word
		}
		if w := p.writeWordIn(strings.ReplaceAll(name, "+", " "), nameMode); w != "" {
			return w, "query name"
		}
		valueMode := mode
		if mode == wordStem && r.literalValue(name, value) {
			valueMode = wordContained // a value the route itself writes, as a literal segment is
		}
		if w := p.writeWordIn(strings.ReplaceAll(value, "+", " "), valueMode); w != "" {
			return w, "query value"
		}
	}
	return "", ""
}

// writeWordIn checks s and each of its percent-decodings, up to maxDecodeRounds of them, for a
// write word (stem: or a write stem). A string still holding an escape after the last decoding
// gives EncodedBeyondLimit.
func (p *Policy) writeWordIn(s string, mode int) string {
	for round := 0; ; round++ {
		if w := p.writeWordInWords(s, mode); w != "" {
			return w
		}
		if strings.IndexByte(s, '%') < 0 {
			return "" // nothing to decode: the next round would see the same string
		}
		// A stray % is not an escape; decode what can be decoded.
		d := lenientUnescape(s)
		if d == s {
			return ""
		}
		if round == maxDecodeRounds {
			return EncodedBeyondLimit
		}
		s = d
	}
}

// isWriteToken reports whether the lower-case word t is a write word, or with stem, carries one:
// starts with a write word of five letters or more ("deleteall", "removed", "closeall"), contains
// one of six or more ("bulkdelete", "unpublish"), or is a write word with an inflection ("added",
// "editing", "closing", "deletion", "dropped", "editall").
func (p *Policy) isWriteToken(t []byte, mode int) string {
	if p.writeWords[string(t)] { // no allocation for a map lookup
		return string(t)
	}
	if mode == wordExact {
		return ""
	}
	for _, v := range p.stemWords {
		n := len(v)
		if len(t) < n-1 {
			continue // every form below is at least the word without its last letter
		}
		if mode == wordContained {
			if n >= 6 && !nounLike[string(v)] && bytes.Contains(t, v) {
				return string(v)
			}
			continue
		}
		switch {
		case n >= 5 && !nounLike[string(v)] && bytes.HasPrefix(t, v) && !plural(t[n:]):
			return string(v)
		case n >= 6 && !nounLike[string(v)] && bytes.Contains(t, v):
			return string(v)
		case bytes.HasPrefix(t, v) && inflection(t[n:], v[n-1]):
			return string(v)
		case v[n-1] == 'e' && n >= 4 && bytes.HasPrefix(t, v[:n-1]) && eDrop(t[n-1:]):
			return string(v)
		}
	}
	return ""
}

// inflection reports whether rest, following a write word ending in last, makes an inflected form
// or a bulk form of it: "d", "ed", "ing", "all", or a doubled last letter and "ed" or "ing". A
// plural "s" is not one: "posts", "orders", "news" and "updates" are the nouns of ordinary reads.
func inflection(rest []byte, last byte) bool {
	switch string(rest) {
	case "d", "ed", "ing", "all":
		return true
	}
	if len(rest) > 0 && rest[0] == last {
		switch string(rest[1:]) {
		case "ed", "ing":
			return true
		}
	}
	return false
}

// plural reports whether rest, following a write word, only makes it plural ("writes", "closes"):
// a noun of an ordinary read, not a command.
func plural(rest []byte) bool { return string(rest) == "s" || string(rest) == "es" }

// eDrop reports whether rest, following a write word ending in "e" without that "e", makes a
// derived form: "closing", "closure", "deletion", "removal".
func eDrop(rest []byte) bool {
	switch string(rest) {
	case "ing", "ion", "ions", "ure", "al":
		return true
	}
	return false
}

// writeWordInWords returns the first of words(s) that is a write word (stem: or carries one, see
// isWriteToken). For ASCII s (nearly every URL) it splits and lower-cases in place, with words'
// exact rules.
func (p *Policy) writeWordInWords(s string, mode int) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			for _, w := range words(s) {
				if v := p.isWriteToken([]byte(w), mode); v != "" {
					return v
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
			return p.isWriteToken([]byte(strings.ToLower(s[start:end])), mode)
		}
		b := buf[:end-start]
		for i := range b {
			c := s[start+i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		return p.isWriteToken(b, mode)
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
