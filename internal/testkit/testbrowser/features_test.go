package testbrowser

import (
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

func TestVerdictControl(t *testing.T) {
	have := Verdict{Feature: FeaturePrerender, Version: "156.0.1.2", Have: true}
	lacks := Verdict{Feature: FeaturePrerender, Version: "148.0.1.2", Why: "PrerenderingDisabledByDevTools"}
	for _, tc := range []struct {
		name    string
		v       Verdict
		tripped bool
		na, err string
	}{
		{"present and armed", have, true, "", ""},
		{"present, not armed", have, false, "", "NOT ARMED: Chromium 156.0.1.2 has speculation-rules prerender"},
		{"absent, not armed", lacks, false, "not applicable on Chromium 148.0.1.2: speculation-rules prerender (PrerenderingDisabledByDevTools)", ""},
		{"absent but armed: the check is wrong", lacks, true, "", "the check is wrong"},
	} {
		na, err := tc.v.Control(tc.tripped)
		if na != tc.na || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: got %q, %v; want %q, error %q", tc.name, na, err, tc.na, tc.err)
		}
	}
}

// TestProbe runs each probe on the installed Chromium: a verdict either way, and a reason with
// every "absent" (a probe that cannot decide fails). The verdicts are logged: they are what make
// test's "not applicable" lines rest on.
func TestProbe(t *testing.T) {
	pw, err := Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Stop()
	b, err := Launch(pw, playwright.BrowserTypeLaunchOptions{Args: []string{"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, f := range []Feature{FeaturePrefetch, FeaturePrerender} {
		v := Probe(t, b, f)
		if v.Version == "" || (!v.Have && v.Why == "") {
			t.Errorf("%s: verdict %+v: want a version, and a reason when absent", f, v)
		}
		if v2 := Probe(t, b, f); v2 != v {
			t.Errorf("%s: a second probe of the same browser gave %+v after %+v (one verdict per browser)", f, v2, v)
		}
		t.Logf("Chromium %s: %s: have %v %s", v.Version, f, v.Have, v.Why)
	}
}
