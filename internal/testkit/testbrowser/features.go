package testbrowser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
)

// A positive control that needs a browser feature checks for the feature first, in the same
// browser the control runs in: Debian serves whichever Chromium its package lists hold that day,
// and a feature one version has another may lack (Chromium 148 does not prerender from speculation
// rules while a DevTools client is attached; 156 does). Where the browser lacks it, the case is
// "not applicable on Chromium N: feature (Chromium's reason)": reported, never silent, and its
// guarded side still runs and must hold. A control that trips although the check said "absent"
// fails its test: the check was wrong (Verdict.Control).

// Feature names a browser capability a positive control needs.
type Feature string

// The speculation-rules features: a page's <script type=speculationrules> "prefetch" list fetches
// a document in the background, its "prerender" list loads and runs one.
const (
	FeaturePrefetch  Feature = "speculation-rules prefetch"
	FeaturePrerender Feature = "speculation-rules prerender"
)

// EnvFeatureAbsent names features a test run must take as absent whatever the probe says
// (comma-separated, e.g. "speculation-rules prerender"): the way to see the check's own control
// red, a check that wrongly says "absent" on a browser that has the feature.
const EnvFeatureAbsent = "BROWSER_AGENT_TEST_FEATURE_ABSENT"

// Verdict is what a probe found: whether the browser has the feature and, when it does not, why
// (Chromium's own reason where it gives one).
type Verdict struct {
	Feature Feature
	Version string // the browser's version
	Have    bool
	Why     string
}

// NotApplicable is the verdict's line for a case that cannot arm on this browser.
func (v Verdict) NotApplicable() string {
	return fmt.Sprintf("not applicable on Chromium %s: %s (%s)", v.Version, v.Feature, v.Why)
}

// Control judges a positive control that needed the feature, from what it tripped: "" and armed
// when it tripped; the not-applicable line when the browser lacks the feature and the control
// tripped nothing; an error when the feature is present and nothing tripped (not armed, as for
// any case), or when the check said "absent" and the control tripped all the same (the check is
// wrong: a case reported not applicable would hide a control that works).
func (v Verdict) Control(tripped bool) (na string, err error) {
	switch {
	case v.Have && tripped:
		return "", nil
	case v.Have:
		return "", fmt.Errorf("NOT ARMED: Chromium %s has %s, and the hostile behaviour tripped nothing against the unguarded browser", v.Version, v.Feature)
	case tripped:
		return "", fmt.Errorf("the feature check says Chromium %s lacks %s (%s), but the positive control tripped: the check is wrong", v.Version, v.Feature, v.Why)
	default:
		return v.NotApplicable(), nil
	}
}

// probes caches one verdict per browser and feature: the browser does not change during a run.
var probes struct {
	sync.Mutex
	m map[string]*probeOnce
}

type probeOnce struct {
	once sync.Once
	v    Verdict
	err  error
}

// Probe checks whether b has feature f, once per browser and feature for the process. An error
// (the probe page could not be opened) fails t: a probe that cannot decide is no verdict.
func Probe(t testing.TB, b playwright.Browser, f Feature) Verdict {
	t.Helper()
	key := fmt.Sprintf("%p/%s", b, f)
	probes.Lock()
	if probes.m == nil {
		probes.m = map[string]*probeOnce{}
	}
	p := probes.m[key]
	if p == nil {
		p = &probeOnce{}
		probes.m[key] = p
	}
	probes.Unlock()
	p.once.Do(func() {
		switch f {
		case FeaturePrefetch:
			p.v, p.err = probeSpeculation(b, f, "prefetch")
		case FeaturePrerender:
			p.v, p.err = probeSpeculation(b, f, "prerender")
		default:
			p.err = fmt.Errorf("no probe for feature %q", f)
		}
		if p.err == nil && p.v.Have && forcedAbsent(f) {
			p.v.Have, p.v.Why = false, "forced absent by $"+EnvFeatureAbsent
		}
	})
	if p.err != nil {
		t.Fatalf("probe for %s: %v", f, p.err)
	}
	return p.v
}

func forcedAbsent(f Feature) bool {
	for _, s := range strings.Split(os.Getenv(EnvFeatureAbsent), ",") {
		if strings.TrimSpace(s) == string(f) {
			return true
		}
	}
	return false
}

// speculationWait bounds a speculation probe: Chromium reports the attempt's outcome (a request of
// the document, or a final status) within a second here; the bound is for a loaded machine.
const speculationWait = 20 * time.Second

// probeSpeculation opens, in a fresh context of b, a page whose speculation rules ask for action
// ("prefetch" or "prerender") of a same-origin document, and watches both the server (a request
// for it whose Sec-Purpose names the action) and Chromium's own report (CDP
// Preload.prefetchStatusUpdated or prerenderStatusUpdated). The browser has the feature when the
// document is requested for that purpose; it lacks it when Chromium reports the attempt failed
// (its final status is the reason, e.g. PrerenderingDisabledByDevTools) or nothing happens within
// speculationWait.
func probeSpeculation(b playwright.Browser, f Feature, action string) (Verdict, error) {
	v := Verdict{Feature: f, Version: b.Version()}
	requested := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/page":
			fmt.Fprintf(w, `<!doctype html><title>probe</title><script type="speculationrules">`+
				`{%q:[{"source":"list","urls":["/target"]}]}</script><p>%s probe</p>`, action, action)
		case "/target":
			purpose := r.Header.Get("Sec-Purpose")
			// A prerender's request says "prefetch;prerender": a prefetch's says "prefetch" alone.
			if strings.Contains(purpose, action) && (action == "prerender" || !strings.Contains(purpose, "prerender")) {
				select {
				case requested <- struct{}{}:
				default:
				}
			}
			fmt.Fprint(w, `<!doctype html><title>target</title><p>target</p>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	bctx, err := b.NewContext()
	if err != nil {
		return v, err
	}
	defer bctx.Close()
	page, err := bctx.NewPage()
	if err != nil {
		return v, err
	}
	cdp, err := bctx.NewCDPSession(page)
	if err != nil {
		return v, err
	}
	status := make(chan string, 8)
	event, reasonField := "Preload.prerenderStatusUpdated", "prerenderStatus"
	if action == "prefetch" {
		event, reasonField = "Preload.prefetchStatusUpdated", "prefetchStatus"
	}
	cdp.On(event, func(ev map[string]any) {
		st, _ := ev["status"].(string)
		switch st {
		case "Failure":
			why, _ := ev[reasonField].(string)
			if d, _ := ev["disallowedMojoInterface"].(string); d != "" {
				why += " " + d
			}
			if why == "" {
				why = action + " failed without a reason"
			}
			status <- "failure:" + why
		case "Ready", "Success":
			status <- "ready"
		}
	})
	if _, err := cdp.Send("Preload.enable", nil); err != nil {
		return v, fmt.Errorf("Preload.enable: %w", err)
	}
	if _, err := page.Goto(srv.URL + "/page"); err != nil {
		return v, err
	}
	timeout := time.After(speculationWait)
	for {
		select {
		case <-requested:
			v.Have = true
			return v, nil
		case s := <-status:
			if s == "ready" {
				v.Have = true
				return v, nil
			}
			v.Why = strings.TrimPrefix(s, "failure:")
			return v, nil
		case <-timeout:
			v.Why = fmt.Sprintf("no %s attempt within %s", action, speculationWait)
			return v, nil
		}
	}
}

// EnvNotApplicableLog names a file each not-applicable case is appended to, one line each (make
// test sets it and prints the lines in its summary).
const EnvNotApplicableLog = "NOT_APPLICABLE_LOG"

// ReportNotApplicable logs line (a Verdict's NotApplicable, with the case's name before it) in t
// and appends it to $NOT_APPLICABLE_LOG when set.
func ReportNotApplicable(t testing.TB, name, line string) {
	t.Helper()
	t.Logf("%s: %s; the guarded side still runs and must hold", name, line)
	f := os.Getenv(EnvNotApplicableLog)
	if f == "" {
		return
	}
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("$%s: %v", EnvNotApplicableLog, err)
		return
	}
	defer fh.Close()
	fmt.Fprintf(fh, "%s: %s\n", name, line)
}
