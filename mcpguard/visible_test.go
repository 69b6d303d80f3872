package mcpguard

import (
	"strings"
	"testing"
)

// snapSample is Playwright MCP 0.0.83's answer to browser_snapshot on a page with hidden text
// (white on white, an aria-label, an image's alt, a clipped block, a field's value).
const snapSample = "### Page\n- Page URL: http://127.0.0.1/page.html\n- Page Title: T\n### Snapshot\n```yaml\n" +
	"- generic [active] [ref=e1]:\n" +
	"  - 'heading \"Hello \\\"there\\\": x\" [level=1] [ref=e2]'\n" +
	"  - paragraph [ref=e3]: Visible text HIDDENWHITE more\n" +
	"  - paragraph [ref=e4]:\n" +
	"    - text: See\n" +
	"    - link \"the docs\" [ref=e5] [cursor=pointer]:\n" +
	"      - /url: /docs?x=1\n" +
	"    - text: for more.\n" +
	"  - button \"Close dialog\" [ref=e6]: X\n" +
	"  - img \"a cat\" [ref=e7]\n" +
	"  - generic [ref=e8]:\n" +
	"    - text: Search\n" +
	"    - textbox \"Search\" [ref=e9]: pre\n" +
	"  - generic: CLIPPED\n" +
	"  - text: \"- starts with a dash\"\n" +
	"```\n### Ran Playwright code\n```js\nawait page.getByRole('button', { name: 'Close dialog' }).click();\n```\n" +
	"### Events\n- [LOG] CONSOLESECRET\n"

// sampleVisible is what rendering proves a person sees of each element of that page, by ref (the
// textbox: its label's text).
var sampleVisible = map[string][]string{
	"e1": {"Hello \"there\": x\nVisible text more\nSee the docs for more.\nX\nSearch\n- starts with a dash"},
	"e2": {"Hello \"there\": x"}, "e3": {"Visible text more"}, "e4": {"See the docs for more."}, "e5": {"the docs"},
	"e6": {"X"}, "e7": {""}, "e8": {"Search"}, "e9": {"", "Search"},
}

func TestProveVisible(t *testing.T) {
	got, did := proveVisible(snapSample, newVisibleText(sampleVisible))
	want := "### Page\n- Page URL: http://127.0.0.1/page.html\n- Page Title: T\n### Snapshot\n```yaml\n" +
		"- generic [active] [ref=e1]:\n" +
		"  - 'heading \"Hello \\\"there\\\": x\" [level=1] [ref=e2]'\n" +
		"  - paragraph [ref=e3]: " + HiddenMark + "\n" +
		"  - paragraph [ref=e4]:\n" +
		"    - text: See\n" +
		"    - link \"the docs\" [ref=e5] [cursor=pointer]:\n" +
		"      - /url: /docs?x=1\n" +
		"    - text: for more.\n" +
		"  - button \"" + HiddenMark + "\" [ref=e6]: X\n" +
		"  - img \"" + HiddenMark + "\" [ref=e7]\n" +
		"  - generic [ref=e8]:\n" +
		"    - text: Search\n" +
		"    - textbox \"Search\" [ref=e9]: " + HiddenMark + "\n" +
		"  - generic: " + HiddenMark + "\n" +
		"  - text: \"- starts with a dash\"\n" +
		"```\n"
	if got != want {
		t.Errorf("proveVisible:\n\tgot  %q\n\twant %q", got, want)
	}
	if len(did) != 2 || !strings.HasPrefix(did[0], "5 snapshot text(s) withheld") {
		t.Errorf("proveVisible said %q, want 5 texts withheld and 2 sections dropped", did)
	}
	// Every ref of the snapshot is still there: the refs of what is shown stay usable.
	refs, _ := snapshotRefs(snapSample)
	kept, _ := snapshotRefs(got)
	if len(kept) != len(refs) {
		t.Errorf("refs: got %d, want %d", len(kept), len(refs))
	}
	// The snapshot in another form than a yaml block: parsed the same way, or withheld.
	got, _ = proveVisible("### Snapshot\n- [Snapshot](.playwright-mcp/page.yml)\n```\n- paragraph [ref=e3]: HIDDENWHITE\n```\n", newVisibleText(sampleVisible))
	if strings.Contains(got, "HIDDENWHITE") || strings.Contains(got, "playwright-mcp") {
		t.Errorf("a snapshot outside a yaml block passed unfiltered:\n%s", got)
	}
	// No proof: no text at all.
	got, _ = proveVisible(snapSample, nil)
	for _, s := range []string{"Visible text", "the docs", "Search", "Hello", "CLIPPED", "HIDDENWHITE"} {
		if strings.Contains(got, s) {
			t.Errorf("without a proof %q was shown:\n%s", s, got)
		}
	}
}

func TestFilterLineUnparsed(t *testing.T) {
	for _, l := range []string{
		"  - paragraph [ref=e3] trailing SECRET",
		"  - 'paragraph [ref=e3]",
		"  SECRET continuation line",
		"  - paragraph [ref=e3]: \"unterminated SECRET",
		"  - button \"SECRET [ref=e4]",
	} {
		got, n := filterLine(l, newVisibleText(map[string][]string{"e3": {"nothing"}, "e4": {"nothing"}}), &ownerStack{})
		if strings.Contains(got, "SECRET") || n != 1 {
			t.Errorf("filterLine(%q):\n\tgot  %q, %d\n\twant no SECRET, 1 withheld", l, got, n)
		}
	}
}

func TestFilterError(t *testing.T) {
	in := "### Error\nTimeoutError: locator.click: Timeout 5000ms exceeded.\n  - <div class=\"cover\">HIDDEN-SECRET</div> intercepts pointer events\n"
	got, did := proveVisible(in, nil)
	want := "### Error\nTimeoutError: locator.click: Timeout 5000ms exceeded.\n" + HiddenMark + "\n"
	if got != want || len(did) != 1 {
		t.Errorf("proveVisible(error):\n\tgot  %q %q\n\twant %q", got, did, want)
	}
}

// TestProveVisibleByNode: a text is proven by its own element, not by the page: a hidden link
// whose text equals a visible heading's is withheld, and a line without a ref of its own is
// proven by its nearest ancestor's element.
func TestProveVisibleByNode(t *testing.T) {
	snap := "### Snapshot\n```yaml\n" +
		"- generic [ref=e1]:\n" +
		"  - heading \"Sign in\" [level=1] [ref=e2]\n" +
		"  - link \"Sign in\" [ref=e3] [cursor=pointer]:\n" +
		"    - /url: /evil\n" +
		"  - paragraph [ref=e4]:\n" +
		"    - text: Sign in\n" +
		"  - paragraph [ref=e5]:\n" +
		"    - text: Sign in\n" +
		"```\n"
	// What a person sees: the heading, and the paragraph e4; the link e3 and the paragraph e5
	// draw nothing (transparent, off screen), though the page shows "Sign in" elsewhere.
	vis := newVisibleText(map[string][]string{"e1": {"Sign in Sign in"}, "e2": {"Sign in"}, "e3": {""}, "e4": {"Sign in"}, "e5": {""}})
	got, _ := proveVisible(snap, vis)
	want := "### Snapshot\n```yaml\n" +
		"- generic [ref=e1]:\n" +
		"  - heading \"Sign in\" [level=1] [ref=e2]\n" +
		"  - link \"" + HiddenMark + "\" [ref=e3] [cursor=pointer]:\n" +
		"    - /url: /evil\n" +
		"  - paragraph [ref=e4]:\n" +
		"    - text: Sign in\n" +
		"  - paragraph [ref=e5]:\n" +
		"    - text: " + HiddenMark + "\n" +
		"```\n"
	if got != want {
		t.Errorf("proveVisible:\n\tgot  %q\n\twant %q", got, want)
	}
}
