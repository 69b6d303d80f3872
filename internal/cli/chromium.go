package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SuiteGreen are the Chromium major versions on which make test has run green on a clean clone
// (README, "Chromium versions"; a test holds the two to each other). Debian serves whichever
// Chromium its package lists hold that day, so doctor says whether the one here is among them.
var SuiteGreen = []int{148, 156}

var chromiumMajor = regexp.MustCompile(`\b(\d+)\.\d+\.\d+\.\d+\b`)

// ChromiumMajor is the major version in a `chromium --version` line ("Chromium 148.0.7778.167
// built on Debian ..."), or 0 when the line holds none.
func ChromiumMajor(version string) int {
	m := chromiumMajor.FindStringSubmatch(version)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// suiteVerdict is doctor's word on a Chromium version: whether the suite has run green on its
// major version, and on which it has.
func suiteVerdict(version string) string {
	var green []string
	for _, v := range SuiteGreen {
		green = append(green, strconv.Itoa(v))
	}
	list := strings.Join(green, ", ")
	switch major := ChromiumMajor(version); {
	case major == 0:
		return "version not recognised; the suite has run green on Chromium " + list
	case slices.Contains(SuiteGreen, major):
		return fmt.Sprintf("the suite has run green on Chromium %d", major)
	default:
		return fmt.Sprintf("the suite has not yet run green on Chromium %d (it has on %s): run make test", major, list)
	}
}
