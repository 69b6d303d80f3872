package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestChromiumMajor(t *testing.T) {
	for in, want := range map[string]int{
		"Chromium 148.0.7778.167":                                 148,
		"Chromium 156.0.8078.73 built on Debian GNU/Linux 12":     156,
		"Google Chrome 131.0.6778.85 ":                            131,
		"Chromium":                                                0,
		"HeadlessChrome/148.0.7778.167 (not a --version line) 12": 148,
	} {
		if got := ChromiumMajor(in); got != want {
			t.Errorf("ChromiumMajor(%q) = %d, want %d", in, got, want)
		}
	}
	if v := suiteVerdict("Chromium 1.2.3.4"); !strings.Contains(v, "not yet run green on Chromium 1 ") {
		t.Errorf("verdict on an unlisted version: %q", v)
	}
	if v := suiteVerdict("Chromium " + strconv.Itoa(SuiteGreen[0]) + ".0.1.2"); !strings.Contains(v, "has run green") {
		t.Errorf("verdict on a listed version: %q", v)
	}
}

// TestSuiteGreenInREADME holds the README's list of Chromium versions the suite has run green on
// to the one doctor reports from.
func TestSuiteGreenInREADME(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(string(b), "**Chromium versions**")
	if !ok {
		t.Fatal(`README.md has no "**Chromium versions**" paragraph`)
	}
	para, _, _ = strings.Cut(para, "\n\n")
	var listed []int
	for _, m := range regexp.MustCompile(`\*\*(\d+)\*\*`).FindAllStringSubmatch(para, -1) {
		n, _ := strconv.Atoi(m[1])
		listed = append(listed, n)
	}
	want := slices.Sorted(slices.Values(SuiteGreen))
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("README lists Chromium %v as green, cli.SuiteGreen says %v", listed, want)
	}
}
