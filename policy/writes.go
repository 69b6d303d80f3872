package policy

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
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
	// Added with the GET-write corpus (testdata/corpus/writes.txt, issue 24): commands of real
	// software that none of the words above named.
	"trash", "spam", "clear", "empty", "uninstall", "protect", "unprotect", "unwatch", "unsub",
	"optout", "impersonate",
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
	return decodings(s, EncodedBeyondLimit, func(s string) string { return p.writeWordInWords(s, mode) })
}

// decodings returns the first non-empty result of check on s and on each of its percent-decodings,
// up to maxDecodeRounds of them (a stray % is not an escape: what can be decoded is), or beyond
// for a string that still holds an escape after the last decoding.
func decodings(s, beyond string, check func(string) string) string {
	for round := 0; ; round++ {
		if r := check(s); r != "" {
			return r
		}
		if strings.IndexByte(s, '%') < 0 {
			return "" // nothing to decode: the next round would see the same string
		}
		d := lenientUnescape(s)
		if d == s {
			return ""
		}
		if round == maxDecodeRounds {
			return beyond
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

// routeWrite looks for a command in a URL that the route r matches, reading each part by its
// position (see Kind): a literal the route writes is held to whole write words and long ones
// inside it; an identifier and each name of a "*" rest to every write stem; free text only at an
// action position. where names the position and the rule, in the policy's own words, never the
// URL's.
func (p *Policy) routeWrite(u *URL, segs []string, r *route) (word, where string) {
	for i, seg := range segs {
		var w string
		kind := r.kindAt(i)
		switch kind {
		case KindLiteral:
			w = p.writeWordIn(seg, wordContained)
		case KindText:
			w = p.textCommand(seg, r.actionPosition(i, segs, p))
		default:
			if w = p.writeWordIn(seg, wordStem); w == "" {
				w = p.joinedWriteWord(seg)
			}
		}
		if w != "" {
			return w, r.describeSeg(i, kind, segs)
		}
	}
	q := u.RawQuery()
	if q == "" {
		return "", ""
	}
	for pair := range strings.SplitSeq(q, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		if w := p.writeWordIn(strings.ReplaceAll(name, "+", " "), wordContained); w != "" {
			return w, fmt.Sprintf("query name (a name %s declares)", r.pattern)
		}
		qp := r.query[name]
		value = strings.ReplaceAll(value, "+", " ")
		var w, rule string
		switch {
		case !qp.param:
			w, rule = p.writeWordIn(value, wordContained), "a value "+r.pattern+" writes itself"
		case qp.kind == KindText:
			w, rule = p.textCommand(value, false), fmt.Sprintf("?%s={%s} of %s is text, where only an action parameter inside it is a command", name, qp.name, r.pattern)
		default:
			if w = p.writeWordIn(value, wordStem); w == "" {
				w = p.joinedWriteWord(value)
			}
			rule = fmt.Sprintf("?%s={%s} of %s is an identifier, where a write word is a command (write {%s:text} if it holds free text)", name, qp.name, r.pattern, qp.name)
			if actionName(name) {
				rule = fmt.Sprintf("?%s= names an action: its value is a command unless it is a read (%s)", name, readActionList)
				if w == "" && !readAction(value) {
					w = ActionNotRead
				}
			}
		}
		if w != "" {
			return w, "query value: " + rule
		}
	}
	return "", ""
}

// describeSeg says which rule read path segment i (counted from 1 in the message) as a command.
func (r *route) describeSeg(i int, kind Kind, segs []string) string {
	n := i + 1
	switch {
	case kind == KindLiteral:
		return fmt.Sprintf("path segment %d: a literal of %s", n, r.pattern)
	case kind == KindText && i >= len(r.segs):
		return fmt.Sprintf("path segment %d: a bare verb in an action position of the *:text rest of %s (first in the rest, or after a record)", n, r.pattern)
	case kind == KindText:
		return fmt.Sprintf("path segment %d: {%s} of %s is text, but a bare verb after a record is an action", n, r.segs[i].name, r.pattern)
	case i >= len(r.segs):
		return fmt.Sprintf("path segment %d: the * rest of %s holds names read as identifiers (write *:text if it holds titles or file paths)", n, r.pattern)
	default:
		return fmt.Sprintf("path segment %d: {%s} of %s is an identifier, where a write word is a command (write {%s:text} if it holds titles or free text)", n, r.segs[i].name, r.pattern, r.segs[i].name)
	}
}

// actionPosition reports whether text segment i stands where a command would: right after a
// variable segment that holds a record ("/questions/123/{slug}", "/posts/5/destroy"), or first in a "*:text" rest ("/x/deleteall").
func (r *route) actionPosition(i int, segs []string, p *Policy) bool {
	if i == len(r.segs) && r.rest {
		return true
	}
	if i == 0 {
		return false
	}
	return r.kindAt(i-1) != KindLiteral && p.recordLike(segs[i-1])
}

// recordLike reports whether a segment reads as a record's identifier: the policy's record
// pattern, a number or a code with as many digits as letters ("5", "SYN-0042"), or a hexadecimal
// hash of seven or more characters with a digit ("3fa2b1c").
func (p *Policy) recordLike(seg string) bool {
	if p.record != nil && p.record.full.MatchString(seg) {
		return true
	}
	digits, letters, hex := 0, 0, true
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case isDigit(c):
			digits++
		case isUpper(c) || isLower(c):
			letters++
			hex = hex && ishex(c)
		case c != '-' && c != '_':
			hex = false
		}
	}
	return digits > 0 && (digits >= letters || hex && len(seg) >= 7)
}

// textCommand reads free text: content, except an action parameter smuggled into it
// ("x&action=delete", for a server that decodes twice), a part still encoded beyond
// maxDecodeRounds, and, at an action position, a bare verb (see bareVerb).
func (p *Policy) textCommand(s string, action bool) string {
	return decodings(s, EncodedBeyondLimit, func(s string) string {
		if w := p.smuggledAction(s); w != "" || !action {
			return w
		}
		return p.bareVerb(s)
	})
}

// smuggledAction finds "name=value" pairs inside s whose name is an action parameter and whose
// value carries a write word or stem.
func (p *Policy) smuggledAction(s string) string {
	if strings.IndexByte(s, '=') < 0 {
		return ""
	}
	for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '&' || r == ';' || r == '?' || r == '#' || r == ' ' }) {
		name, value, ok := strings.Cut(part, "=")
		if !ok || !actionName(name) {
			continue
		}
		if w := p.writeWordInWords(value, wordStem); w != "" {
			return w
		}
		if w := p.joinedWriteWord(value); w != "" {
			return w
		}
		if !readAction(value) {
			return ActionNotRead
		}
	}
	return ""
}

// ActionNotRead is the "word" routeWrite reports for an action parameter whose value is not one
// of readActions.
const ActionNotRead = "(an action parameter that is not a read)"

// readActions are the values of an action parameter that only read: MediaWiki's action=history,
// info, raw; a viewer's mode=view or do=show. Any other value names a command.
var readActions = map[string]bool{
	"": true, "view": true, "show": true, "read": true, "list": true, "get": true, "search": true,
	"find": true, "display": true, "info": true, "history": true, "raw": true, "render": true,
	"print": true, "preview": true, "index": true, "browse": true, "query": true, "details": true,
	"detail": true, "compare": true, "diff": true, "help": true, "about": true, "home": true,
	"default": true, "overview": true, "summary": true, "status": true, "stats": true, "feed": true,
	"rss": true, "atom": true,
}

var readActionList = strings.Join(slices.Sorted(maps.Keys(readActions))[1:], ", ")

// readAction reports whether an action parameter's value (as sent, percent-decoded and folded to
// lower case) is one of readActions.
func readAction(v string) bool {
	return readActions[strings.ToLower(strings.TrimSpace(lenientUnescape(v)))]
}

// bareVerb reports the write word of a segment that is a verb or a verb compound: at most two
// words besides numbers ("close", "deleteAll", "purge_all", "delete.php", "ban"), one of which is
// or carries a write word, or whose words joined make one ("sign_out"). A title or a sentence
// ("Post_office_box", "how-to-reset-your-router") is not bare.
func (p *Policy) bareVerb(s string) string {
	var ws []string
	for _, w := range words(s) {
		if w[0] < '0' || w[0] > '9' {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 || len(ws) > 2 {
		return ""
	}
	for _, w := range ws {
		if v := p.isWriteToken([]byte(w), wordStem); v != "" {
			return v
		}
	}
	return p.joinedWriteWord(s)
}

// joinedWriteWord reports a write word spelled across the words of s with separators between
// them ("sign_out", "log-out", "un-publish").
func (p *Policy) joinedWriteWord(s string) string {
	ws := words(s)
	if len(ws) < 2 {
		return ""
	}
	j := strings.Join(ws, "")
	if p.writeWords[j] {
		return j
	}
	return ""
}
