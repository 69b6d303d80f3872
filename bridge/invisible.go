package bridge

import "github.com/browser-agent/browser-agent/internal/invisible"

// whyInvisible is the account's reason for the code points stripInvisible withholds.
const whyInvisible = "invisible characters"

// stripInvisible takes out of what a read proved visible the code points no font draws (package
// invisible: tag characters, zero-width carriers, stray variation selectors, bidirectional
// overrides and what they govern), from the text, title, heading, link texts and fields alike:
// the proof says where a run is drawn, not that each of its code points draws something. It
// returns how many it withheld from the text and from the rest.
func stripInvisible(snap *snapshot) (text, rest int) {
	strip := func(s *string, n *int) {
		var k int
		*s, k = invisible.Strip(*s)
		*n += k
	}
	strip(&snap.text, &text)
	strip(&snap.title, &rest)
	strip(&snap.heading, &rest)
	for i := range snap.links {
		strip(&snap.links[i].Text, &rest)
	}
	for i := range snap.fields {
		strip(&snap.fields[i].Label, &rest)
		strip(&snap.fields[i].Value, &rest)
	}
	return text, rest
}
