// Package invisible decides, character by character, which code points of a text a person sees
// drawn, and withholds the rest: the model is handed what a person reads, never a carrier that
// draws nothing.
//
// Models read code points that no font draws: Unicode tag characters (U+E0000–U+E007F) spell
// ASCII ("ASCII smuggling"), runs of zero-width characters or variation selectors encode bytes,
// and a bidirectional override shows a person one order of letters while the DOM (and a model)
// holds another. The rule is by class, from Unicode's own properties, not by a list of attacks:
//
//   - A default-ignorable code point (general category Cf, the variation selectors, Unicode's
//     Other_Default_Ignorable_Code_Point: fillers, the combining grapheme joiner, ...) draws
//     nothing, and is withheld,
//   - except where it is part of a glyph a person sees:
//   - ZWJ (U+200D) between two emoji (a family, a profession with a skin tone), or ZWJ and ZWNJ
//     (U+200C) between two letters or marks of a script that shapes with them (Devanagari
//     conjuncts, Persian and Arabic joining): they change the glyphs drawn;
//   - one variation selector right after the character it selects a presentation of (an emoji
//     or a keycap's digit with U+FE0E/U+FE0F; a CJK ideograph's standardized or ideographic
//     variant): a second one in a row selects nothing and is withheld;
//   - tag characters in an emoji tag sequence: U+1F3F4 (a black flag) followed by tag letters
//     and digits and ended by U+E007F draws one subdivision flag (England, Scotland, Wales).
//   - A bidirectional override (LRO U+202D, RLO U+202E) draws the letters it governs in an order
//     other than the text's own: the override and every character it governs (to its PDF or the
//     end of the text) are withheld, since what the model would read is not what a person sees.
//     Bidirectional marks, embeddings and isolates (LRM, RLM, ALM, LRE, RLE, PDF, LRI, RLI, FSI,
//     PDI) draw nothing and are withheld; the letters they surround are kept.
//
// Visible control characters, spaces and every letter are kept: the guard counts, it never
// rewrites what a person sees.
package invisible

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	zwnj = '\u200C'
	zwj  = '\u200D'
	lro  = '\u202D'
	rlo  = '\u202E'
	pdf  = '\u202C'
	lre  = '\u202A'
	rle  = '\u202B'

	blackFlag = '\U0001F3F4'
	cancelTag = '\U000E007F'
)

// Strip returns s without the code points a person does not see drawn, and how many it withheld.
// A text with none is returned as it is, unallocated.
func Strip(s string) (string, int) {
	i := firstCandidate(s)
	if i < 0 {
		return s, 0
	}
	rs := []rune(s)
	keep := make([]bool, len(rs))
	for j := range keep {
		keep[j] = true
	}
	withheld := 0
	drop := func(j int) {
		if keep[j] {
			keep[j] = false
			withheld++
		}
	}
	// Overrides first: an override and everything it governs, to its matching PDF.
	for j := 0; j < len(rs); j++ {
		if rs[j] != lro && rs[j] != rlo {
			continue
		}
		depth := 0
		k := j
		for ; k < len(rs); k++ {
			switch rs[k] {
			case lro, rlo, lre, rle:
				depth++
			case pdf:
				depth--
			case '\n', '\u2029':
				depth = 0 // an override ends with its paragraph
			}
			if rs[k] != '\n' && rs[k] != '\u2029' {
				drop(k)
			}
			if depth == 0 {
				break
			}
		}
		j = k
	}
	for j, r := range rs {
		if !keep[j] || !ignorable(r) {
			continue
		}
		if !partOfGlyph(rs, j) {
			drop(j)
		}
	}
	if withheld == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	for j, r := range rs {
		if keep[j] {
			b.WriteRune(r)
		}
	}
	return b.String(), withheld
}

// Count is how many code points Strip would withhold from s.
func Count(s string) int {
	_, n := Strip(s)
	return n
}

// firstCandidate is the byte offset of the first code point Strip may withhold, or -1: most text
// has none, and is returned at the cost of one scan.
func firstCandidate(s string) int {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0xAD && (ignorable(r) || r == lro || r == rlo) {
			return i
		}
		i += size
	}
	return -1
}

// ignorable reports whether r is a default-ignorable code point: it draws nothing by itself.
func ignorable(r rune) bool {
	if r < 0xAD {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u034F' // combining grapheme joiner
}

// partOfGlyph reports whether the ignorable rs[j] shapes or selects a glyph a person sees.
func partOfGlyph(rs []rune, j int) bool {
	r := rs[j]
	prev, next := rune(-1), rune(-1)
	if j > 0 {
		prev = rs[j-1]
	}
	if j+1 < len(rs) {
		next = rs[j+1]
	}
	switch {
	case r == zwj:
		// Between emoji (the one before may carry its presentation selector or skin tone).
		p := prev
		if (p == '\uFE0F' || isSkinTone(p)) && j > 1 {
			p = rs[j-2]
		}
		if isEmoji(p) && isEmoji(next) {
			return true
		}
		return shapes(prev, next)
	case r == zwnj:
		return shapes(prev, next)
	case unicode.Is(unicode.Variation_Selector, r):
		if prev < 0 || ignorable(prev) {
			return false // a selector after a selector (or after nothing) selects nothing
		}
		switch {
		case r == '\uFE0E' || r == '\uFE0F':
			return isEmoji(prev) || unicode.IsSymbol(prev) || prev == '#' || prev == '*' || ('0' <= prev && prev <= '9')
		case r >= '\uFE00' && r <= '\uFE0D', r >= '\U000E0100' && r <= '\U000E01EF':
			return unicode.Is(unicode.Han, prev)
		}
		return unicode.Is(unicode.Mongolian, prev) // Mongolian free variation selectors
	case r >= '\U000E0020' && r <= '\U000E007F':
		return inFlagTagSequence(rs, j)
	}
	return false
}

// shapes reports whether a joiner between prev and next changes how they are drawn: both are
// letters or marks of a script other than Latin, Greek or Cyrillic (scripts that join or form
// conjuncts), as in Devanagari "क्‍ष" or Persian "می‌خواهم".
func shapes(prev, next rune) bool {
	letter := func(r rune) bool {
		return r > 0x2FF && (unicode.IsLetter(r) || unicode.IsMark(r)) &&
			!unicode.Is(unicode.Latin, r) && !unicode.Is(unicode.Greek, r) && !unicode.Is(unicode.Cyrillic, r)
	}
	// After a virama the joiner forms a half form or a chillu, at the end of a word too.
	return letter(prev) && (letter(next) || unicode.IsMark(prev))
}

// isEmoji approximates Extended_Pictographic (not in the standard library) by the symbol
// categories of the emoji blocks.
func isEmoji(r rune) bool {
	if r < 0x2000 {
		return r == 0xA9 || r == 0xAE
	}
	return unicode.Is(unicode.So, r) || isSkinTone(r) || (r >= 0x1F000 && r <= 0x1FAFF)
}

func isSkinTone(r rune) bool { return r >= 0x1F3FB && r <= 0x1F3FF }

// inFlagTagSequence reports whether rs[j], a tag character, is in an emoji tag sequence: a black
// flag, then one to seven tag letters or digits, then CANCEL TAG.
func inFlagTagSequence(rs []rune, j int) bool {
	start := j
	for start > 0 && rs[start-1] >= '\U000E0020' && rs[start-1] <= '\U000E007E' {
		start--
	}
	if start == 0 || rs[start-1] != blackFlag {
		return false
	}
	end := start
	for end < len(rs) && isTagAlnum(rs[end]) {
		end++
	}
	n := end - start
	return n >= 1 && n <= 7 && end < len(rs) && rs[end] == cancelTag && j <= end
}

func isTagAlnum(r rune) bool {
	return (r >= '\U000E0030' && r <= '\U000E0039') || (r >= '\U000E0061' && r <= '\U000E007A')
}
