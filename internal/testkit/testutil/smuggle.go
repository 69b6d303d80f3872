package testutil

import "strings"

// The invisible carriers of issue 40: text in code points no font draws, which a model reads all
// the same.

// Tags spells s in Unicode tag characters ("ASCII smuggling").
func Tags(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(0xE0000 + r)
	}
	return b.String()
}

// ZeroWidthBits encodes s as bits, eight a byte: ZWSP for 0, ZWNJ for 1.
func ZeroWidthBits(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		for i := 7; i >= 0; i-- {
			b.WriteRune([]rune{'\u200B', '\u200C'}[c>>i&1])
		}
	}
	return b.String()
}

// Selectors encodes s as variation selectors, one a byte ("emoji smuggling" after an emoji).
func Selectors(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c < 16 {
			b.WriteRune(0xFE00 + rune(c))
		} else {
			b.WriteRune(0xE0100 + rune(c-16))
		}
	}
	return b.String()
}
