package policy

import (
	"math/rand/v2"
	"testing"
)

// TestWriteWordInWordsMatchesWords checks the allocation-free ASCII scan of writeWordInWords
// against the reference split of words, on chosen and random strings.
func TestWriteWordInWordsMatchesWords(t *testing.T) {
	p := mustParse(t, "version: 1\nsites:\n  - origin: http://127.0.0.1:8081\n    read: [/]\nwrite_words: [archive, averyveryveryveryveryveryveryveryveryveryveryveryverylongwritewordthatexceedsthebuffer]\n")
	ref := func(s string, mode int) string {
		for _, w := range words(s) {
			if v := p.isWriteToken([]byte(w), mode); v != "" {
				return v
			}
		}
		return ""
	}
	cases := []string{
		"", "delete", "DELETE", "deleteAll", "XMLDelete", "SYN-0042", "del3te", "de1ete", "2delete",
		"records", "Delete2", "doDELETEnow", "DELETEnow", "re-move", "rm", "RM_rf", "archive",
		"averyveryveryveryveryveryveryveryveryveryveryveryverylongwritewordthatexceedsthebuffer",
		"AVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYLONGWRITEWORDTHATEXCEEDSTHEBUFFER",
		"édit", "d\xffelete", "naïve-delete", "ＤＥＬＥＴＥ", "%64elete", "a.b.c", "ABCdef", "ABcDe",
	}
	alphabet := "aAdDeElLtTrRmMoOvV09-_.%é"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := rng.IntN(16)
		var b []rune
		for range n {
			rs := []rune(alphabet)
			b = append(b, rs[rng.IntN(len(rs))])
		}
		cases = append(cases, string(b))
	}
	for _, w := range DefaultWriteWords {
		cases = append(cases, w, "x"+w, w+"1", "X"+w, "A"+string(w[0]-32)+w[1:])
	}
	for _, s := range cases {
		for _, mode := range []int{wordExact, wordContained, wordStem} {
			if got, want := p.writeWordInWords(s, mode), ref(s, mode); got != want {
				t.Errorf("writeWordInWords(%q, mode %d) = %q, words gives %q", s, mode, got, want)
			}
		}
	}
}
