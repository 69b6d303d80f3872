package bridge

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// fontFiles holds font files registered by key, served under /static/fonts/{key} (fixture).
var fontFiles sync.Map

// fontFace is an @font-face rule for family whose bytes are served as a file (file) or inline as a
// data: URL.
func fontFace(family string, b []byte, file bool) string {
	src := "data:font/ttf;base64," + base64.StdEncoding.EncodeToString(b)
	if file {
		k := newKey()
		fontFiles.Store(k, b)
		src = "/static/fonts/" + k
	}
	return fmt.Sprintf("@font-face{font-family:%q;src:url(%s)}", family, src)
}

// honestFonts are Debian's font packages' families (scripts/setup installs them), served as web
// fonts under names of their own: the reader must read text drawn in them.
var honestFonts = []struct{ name, path string }{
	{"Open Sans", "/usr/share/fonts/truetype/open-sans/OpenSans-Regular.ttf"},
	{"Open Sans Italic", "/usr/share/fonts/truetype/open-sans/OpenSans-Italic.ttf"},
	{"Lato", "/usr/share/fonts/truetype/lato/Lato-Regular.ttf"},
	{"Lato Bold", "/usr/share/fonts/truetype/lato/Lato-Bold.ttf"},
	{"Inter", "/usr/share/fonts/opentype/inter/Inter-Regular.otf"},
	{"Carlito", "/usr/share/fonts/truetype/crosextra/Carlito-Regular.ttf"},
	{"Caladea", "/usr/share/fonts/truetype/crosextra/Caladea-Regular.ttf"},
	{"Roboto", "/usr/share/fonts/truetype/roboto/unhinted/RobotoTTF/Roboto-Regular.ttf"},
	{"Cantarell", "/usr/share/fonts/opentype/cantarell/Cantarell-Regular.otf"},
	{"Fira Code", "/usr/share/fonts/truetype/firacode/FiraCode-Regular.ttf"},
	{"EB Garamond", "/usr/share/fonts/opentype/ebgaramond/EBGaramond12-Regular.otf"},
	{"Liberation Sans 2", "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"},
	{"Comfortaa", "/usr/share/fonts/truetype/comfortaa/Comfortaa-Regular.ttf"},
	{"Hack", "/usr/share/fonts/truetype/hack/Hack-Regular.ttf"},
}

// honestProse is ordinary text: every ASCII letter, digit and punctuation mark, in sentences.
var honestProse = []string{
	"The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs!",
	"SPHINX OF BLACK QUARTZ, JUDGE MY VOW. How vexingly quick daft zebras jump?",
	"Invoice #4471 (due 2026-03-15): 1,250.00 € + 9.5% = $1,368.75 — paid in full.",
	"Call 0800 123 456 or write to help@example.org; see https://example.org/faq?q=7&lang=en.",
	"\"Quoted\" and 'single' text, [brackets], {braces}, <angles>, a/b\\c, ~tilde~ `code` ^caret^ _under_ | pipe *star* +plus+ =eq=.",
	"Records 0123456789 and 9876543210; Iceland, Oslo, lily, 1l1I0O, ragged edges.",
}

// TestReaderHonestWebFonts reads ordinary prose drawn in honest web fonts (Debian's font
// packages, each as an inline data: URL and as a file, a page a family) and states the share of
// their characters read: at least 99 %.
func TestReaderHonestWebFonts(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	total, lost := 0, 0
	for i, f := range honestFonts {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%s: %v (scripts/setup installs Debian's font packages)", f.name, err)
		}
		var css, body strings.Builder
		n := 0
		for _, file := range []bool{false, true} {
			fam := fmt.Sprintf("W%d-%v", i, file)
			css.WriteString(fontFace(fam, b, file))
			for _, p := range honestProse {
				fmt.Fprintf(&body, "<p style=\"font-family:'%s',sans-serif\">%s</p>\n", fam, htmlEscape(p))
				n += nonSpace(p)
			}
		}
		text := openAll(t, s, visURL("<style>"+css.String()+"</style>"+body.String(), ""))
		end, err := s.Read(ctxT(t), len(text))
		if err != nil {
			t.Fatal(err)
		}
		l := end.Account.Withheld[readerjs.WhyFont]
		total, lost = total+n, lost+l
		if l > 0 {
			var miss []string
			for _, p := range honestProse {
				if strings.Count(text, p) < 2 {
					miss = append(miss, p)
				}
			}
			t.Logf("%s: %d of %d characters withheld for the font; not read twice: %q", f.name, l, n, miss)
		}
	}
	share := 100 * float64(total-lost) / float64(total)
	t.Logf("honest web fonts: %d families, each as a data: URL and a file: %d of %d characters read (%.2f %%)", len(honestFonts), total-lost, total, share)
	if share < 99 {
		t.Errorf("read %.2f %% of the honest web fonts' characters, want at least 99 %%", share)
	}
}

// TestReaderFontGlyphs draws every ASCII character alone in each honest web font (a span each)
// and names the characters the font check refuses: the detail behind the share above.
func TestReaderFontGlyphs(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	var css, body strings.Builder
	var chars []string
	for r := rune('!'); r <= '~'; r++ {
		chars = append(chars, string(r))
	}
	fonts := honestFonts
	for i, f := range fonts {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		fam := fmt.Sprintf("G%d", i)
		css.WriteString(fontFace(fam, b, true))
		body.WriteString("<p>")
		for _, c := range chars {
			// The label in the system's font, the character in the web font.
			fmt.Fprintf(&body, "%s<span style=\"font-family:'%s',sans-serif\">%s</span> ", f.name[:1]+fmt.Sprint(i), fam, htmlEscape(c))
		}
		body.WriteString("</p>")
	}
	text := openAll(t, s, visURL("<style>"+css.String()+"</style>"+body.String(), ""))
	bad := 0
	for i, f := range fonts {
		var miss []string
		for _, c := range chars {
			if !strings.Contains(text, f.name[:1]+fmt.Sprint(i)+c) {
				miss = append(miss, c)
			}
		}
		bad += len(miss)
		if len(miss) > 0 {
			t.Logf("%s: not read: %s", f.name, strings.Join(miss, " "))
		}
	}
	if share := 100 * float64(len(fonts)*len(chars)-bad) / float64(len(fonts)*len(chars)); share < 99 {
		t.Errorf("glyphs read: %.2f %%, want at least 99 %%", share)
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// lyingFonts are the attacks: fonts that draw other characters than the DOM holds.
func lyingFonts(t testing.TB) map[string][]byte {
	sentence, err := testutil.Sentence(fontHidden, fontShown)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for name, lie := range map[string]testutil.Lie{
		"one shape": testutil.OneShape(), "letter permutation": testutil.Rot13(),
		"digits only": testutil.DigitSwap(), "another sentence": sentence,
	} {
		b, err := testutil.LyingFont(testutil.BaseFont, lie)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// fontHidden is what the DOM holds and fontShown what the "another sentence" font draws of it.
const (
	fontHidden = "ZQX-HIDDEN-MARKER-7731"
	fontShown  = "New sweets onsets ooze"
)

// TestReaderLyingFonts: text in a font that draws other characters is withheld, counted in the
// account under its reason; the page's other text is read. The control: the same page in the
// honest font the lying ones are made from is read whole.
func TestReaderLyingFonts(t *testing.T) {
	t.Parallel()
	honest, err := testutil.LyingFont(testutil.BaseFont, testutil.Lie{})
	if err != nil {
		t.Fatal(err)
	}
	fonts := lyingFonts(t)
	fonts["honest control"] = honest
	for name, b := range fonts {
		for _, file := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/file=%v", name, file), func(t *testing.T) {
				t.Parallel()
				s := newSession(t, WithWithheldList(true))
				page := "<style>" + fontFace("L", b, file) + "</style><p>Plain text before.</p>" +
					"<p style=\"font-family:L,sans-serif\">" + fontHidden + " pays 5000 today</p><p>Plain text after.</p>"
				p, err := s.Open(ctxT(t), visURL(page, ""))
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"Plain text before.", "Plain text after."} {
					if !strings.Contains(p.Text, want) {
						t.Errorf("text lacks %q:\n%s", want, p.Text)
					}
				}
				got := strings.Contains(p.Text, fontHidden)
				why := p.Account.Withheld[readerjs.WhyFont]
				if name == "honest control" {
					if !got || why != 0 {
						t.Errorf("honest font: hidden text read %v, withheld for the font %d %+v; text:\n%s", got, why, p.WithheldRuns, p.Text)
					}
					return
				}
				if got || strings.Contains(p.Text, "5000") {
					t.Errorf("text drawn in a lying font reached the text:\n%s", p.Text)
				}
				if why == 0 {
					t.Errorf("account %+v: nothing withheld as %q", p.Account, readerjs.WhyFont)
				}
				if !strings.Contains(p.Account.Note(true), readerjs.WhyFont) {
					t.Errorf("note %q does not name the font", p.Account.Note(true))
				}
			})
		}
	}
}

// BenchmarkReaderFonts is the font check's cost per page: the same prose (honestProse, six
// paragraphs) opened and read in the system's font, in one honest web font and in three (each
// paragraph set in each), each Open a new document (the check's verdicts are kept per document).
func BenchmarkReaderFonts(b *testing.B) {
	s := newSession(b)
	for _, c := range []struct {
		name  string
		fonts []int // indexes into honestFonts
	}{{"system font", nil}, {"1 web font", []int{0}}, {"3 web fonts", []int{0, 2, 4}}} {
		var css, body strings.Builder
		fams := []string{"sans-serif"}
		if len(c.fonts) > 0 {
			fams = nil
		}
		for _, i := range c.fonts {
			data, err := os.ReadFile(honestFonts[i].path)
			if err != nil {
				b.Fatal(err)
			}
			fam := fmt.Sprintf("B%d", i)
			css.WriteString(fontFace(fam, data, true))
			fams = append(fams, "'"+fam+"',sans-serif")
		}
		for _, fam := range fams {
			for _, p := range honestProse {
				fmt.Fprintf(&body, "<p style=\"font-family:%s\">%s</p>\n", fam, htmlEscape(p))
			}
		}
		url := visURL("<style>"+css.String()+"</style>"+body.String(), "")
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p, err := s.Open(ctxT(b), url)
				if err != nil {
					b.Fatal(err)
				}
				if p.Account.Withheld[readerjs.WhyFont] != 0 {
					b.Fatalf("honest prose withheld for the font: %+v", p.Account)
				}
			}
		})
	}
}

// TestReaderIconFont: Font Awesome (Debian's fonts-font-awesome) draws icons at private-use code
// points no system font draws: the icon's run is withheld for the font (an icon is not the text
// it encodes), and the page's other text, in the same paragraph and around it, is read.
func TestReaderIconFont(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/usr/share/fonts/truetype/font-awesome/fontawesome-webfont.ttf")
	if err != nil {
		t.Fatalf("%v (scripts/setup installs fonts-font-awesome)", err)
	}
	s := newSession(t)
	page := "<style>" + fontFace("FA", b, true) + "</style><p>Home <span style=\"font-family:FA\">\uf015</span> page of the record.</p><p>Plain text after.</p>"
	p, err := s.Open(ctxT(t), visURL(page, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Home", "page of the record.", "Plain text after."} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, p.Text)
		}
	}
	if strings.ContainsRune(p.Text, '\uf015') || p.Account.Withheld[readerjs.WhyFont] != 1 {
		t.Errorf("icon: in the text %v, withheld for the font %d, want 1 (%+v)", strings.ContainsRune(p.Text, '\uf015'), p.Account.Withheld[readerjs.WhyFont], p.Account)
	}
}
