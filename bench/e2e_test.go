package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// plainLookup is what a plain playwright-go script does for the lookup preset, with no policy,
// proxy or checks: the offline planner's navigations and reads on the same pages (search page:
// text and links; record: text, fields and links; registry B source: text and fields).
type plainLookup struct {
	page   playwright.Page
	origin string
	steps  *stepTimes
}

const (
	jsLinks  = `() => Array.from(document.querySelectorAll('a[href]'), a => [a.href, a.innerText])`
	jsFields = `() => Array.from(document.querySelectorAll('dl dt'), dt => [dt.innerText, dt.nextElementSibling ? dt.nextElementSibling.innerText : ''])`
)

func (p plainLookup) run(id string) error {
	step := func(url string, links, fields bool) error {
		start := time.Now()
		if _, err := p.page.Goto(url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			return err
		}
		p.steps.add("plain-goto", time.Since(start))
		start = time.Now()
		if _, err := p.page.InnerText("body"); err != nil {
			return err
		}
		if fields {
			v, err := p.page.Evaluate(jsFields)
			if err != nil {
				return err
			}
			if fs, _ := v.([]any); len(fs) == 0 {
				return fmt.Errorf("%s: no fields", url)
			}
		}
		if links {
			if _, err := p.page.Evaluate(jsLinks); err != nil {
				return err
			}
		}
		p.steps.add("plain-read", time.Since(start))
		return nil
	}
	if err := step(p.origin+"/search?q="+id, true, false); err != nil {
		return err
	}
	if err := step(p.origin+"/records/"+id, true, true); err != nil {
		return err
	}
	return step(p.origin+"/sources/b/"+id, false, true)
}

// stepTimes collects the duration of each kind of step (a guarded tool call, a plain Goto or read)
// over a benchmark's iterations, for the per-step medians it reports.
type stepTimes struct {
	mu sync.Mutex
	on bool
	d  map[string][]time.Duration
}

func (st *stepTimes) add(name string, d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.on {
		return
	}
	if st.d == nil {
		st.d = map[string][]time.Duration{}
	}
	st.d[name] = append(st.d[name], d)
}

// report adds the median of every step kind, in ms, to the benchmark's metrics.
func (st *stepTimes) report(b *testing.B) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for name, ds := range st.d {
		b.ReportMetric(ms(median(ds)), name+"-ms")
	}
}

// timedBrowser is the guarded browser with its tool calls timed. The other methods (the
// decisions' log, liveness) are the guarded browser's own.
type timedBrowser struct {
	*guarded.Browser
	steps *stepTimes
}

func (t timedBrowser) Open(ctx context.Context, url string) (bridge.Page, error) {
	start := time.Now()
	defer func() { t.steps.add("guarded-open", time.Since(start)) }()
	return t.Browser.Open(ctx, url)
}

func (t timedBrowser) Read(ctx context.Context, offset int) (bridge.Chunk, error) {
	start := time.Now()
	defer func() { t.steps.add("guarded-read", time.Since(start)) }()
	return t.Browser.Read(ctx, offset)
}

func (t timedBrowser) Links(ctx context.Context) ([]bridge.Link, error) {
	start := time.Now()
	defer func() { t.steps.add("guarded-links", time.Since(start)) }()
	return t.Browser.Links(ctx)
}

func (t timedBrowser) Fields(ctx context.Context) ([]bridge.Field, error) {
	start := time.Now()
	defer func() { t.steps.add("guarded-fields", time.Since(start)) }()
	return t.Browser.Fields(ctx)
}

// BenchmarkLookup runs the lookup preset (offline planner, coordinator, guarded browser with its
// egress proxy, launched once) and, interleaved in the same iterations, the plain playwright-go
// script on the same in-process demo site and the same Chromium binary. It reports both times per
// run and their ratio. The audit store is left out (the cold-start benchmark includes it).
//
//	go test ./bench -run '^$' -bench Lookup -benchtime 20x -count 5
func BenchmarkLookup(b *testing.B) {
	b.Run("settle=default", func(b *testing.B) { benchLookup(b) })
	b.Run("settle=0", func(b *testing.B) { benchLookup(b, bridge.WithSettle(0)) })
}

func benchLookup(b *testing.B, opts ...bridge.Option) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lookupOn(b, ctx, lookupSite(b).URL, nil, nil, opts...)
}

// lookupSite starts the demo site the lookup preset reads (seed 1, the default records), closed
// at the benchmark's end.
func lookupSite(b testing.TB) *demosite.Server {
	b.Helper()
	srv, err := demosite.Start(context.Background(), "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return srv
}

// playwrightMCP is Playwright MCP's server (@playwright/mcp's cli.js, installed with npm ci in
// bench/playwright-mcp), or "" when it is not installed.
func playwrightMCP() string {
	p := filepath.Join(testbrowser.RepoRoot(), "bench", "playwright-mcp", "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// plainPage starts plain playwright-go (no policy, proxy or checks): the driver and a headless
// Chromium launched with opts completed by testbrowser.Options, and opens a page in it. stop
// closes the browser and stops the driver.
func plainPage(b *testing.B, opts playwright.BrowserTypeLaunchOptions) (page playwright.Page, stop func()) {
	b.Helper()
	pw, err := testbrowser.Run(nil)
	if err != nil {
		b.Fatal(err)
	}
	browser, err := testbrowser.Launch(pw, opts)
	if err != nil {
		pw.Stop()
		b.Fatal(err)
	}
	stop = func() { browser.Close(); pw.Stop() }
	if page, err = browser.NewPage(); err != nil {
		stop()
		b.Fatal(err)
	}
	return page, stop
}

// lookupOn measures the lookup preset on the demo site at origin, guarded (the proxy with popts)
// against plain playwright-go (Chromium with plainArgs), interleaved.
func lookupOn(b *testing.B, ctx context.Context, origin string, popts []proxy.Option, plainArgs []string, opts ...bridge.Option) {
	pol, err := policy.Parse(demosite.PolicyYAML(origin), "demo-site policy")
	if err != nil {
		b.Fatal(err)
	}
	// The proxy lives as long as the context it starts with: launch with the benchmark's.
	g, err := guarded.LaunchWith(ctx, pol, popts, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()

	page, stop := plainPage(b, playwright.BrowserTypeLaunchOptions{Args: plainArgs})
	defer stop()
	steps := &stepTimes{}
	plain := plainLookup{page: page, origin: origin, steps: steps}
	tb := timedBrowser{Browser: g, steps: steps}

	preset, _ := presets.ByName("lookup")
	c := coordinator.New(pol)
	guardedRun := func() {
		res := c.Run(ctx, coordinator.RunArgs{Task: preset.Task, Preset: preset.Name, Model: offline.New(), Browser: tb})
		if res.Status != coordinator.StatusAnswered {
			b.Fatalf("lookup: %s: %s; steps %+v", res.Status, res.Reason, res.Steps)
		}
	}
	plainRun := func() {
		if err := plain.run("SYN-0042"); err != nil {
			b.Fatal(err)
		}
	}
	guardedRun() // warm both up
	plainRun()
	tg := make([]time.Duration, 0, b.N)
	tp := make([]time.Duration, 0, b.N)
	steps.on = true
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		guardedRun()
		tg = append(tg, time.Since(start))
		start = time.Now()
		plainRun()
		tp = append(tp, time.Since(start))
	}
	b.StopTimer()
	mg, mp := median(tg), median(tp)
	b.ReportMetric(ms(mg), "guarded-ms")
	b.ReportMetric(ms(mp), "plain-ms")
	b.ReportMetric(float64(mg)/float64(mp), "guarded/plain")
	steps.report(b)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

var (
	binMu    sync.Mutex
	binPaths = map[string]string{}
)

// agentBinary builds cmd/browser-agent once per test binary, into a temporary directory.
func agentBinary(b testing.TB) string {
	return buildOnce(b, "github.com/browser-agent/browser-agent/cmd/browser-agent")
}

// buildOnce builds the main package pkg once per test binary, into a temporary directory.
func buildOnce(b testing.TB, pkg string) string {
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[pkg]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", p, pkg).CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v: %s", pkg, err, out)
	}
	binPaths[pkg] = p
	return p
}

// BenchmarkColdStart runs "browser-agent run --preset lookup" as a new process per iteration: the
// embedded demo site, the audit store, the driver, the egress proxy, a fresh Chromium, the run and
// the shutdown. Interleaved in the same iterations it runs bench/plaincold, a plain playwright-go
// program that starts the same demo site, launches Chromium and reads the lookup's three pages.
// It reports the median wall time of each, their ratio (agent/plain), and the median peak RSS
// (VmHWM) of the browser-agent process itself (Chromium and the Node driver excluded), polled
// from /proc/PID/status every 5 ms until the process exits.
//
//	go test ./bench -run '^$' -bench ColdStart -benchtime 5x -count 5
func BenchmarkColdStart(b *testing.B) {
	bin := agentBinary(b)
	plainBin := buildOnce(b, "github.com/browser-agent/browser-agent/bench/plaincold")
	drv := testbrowser.DriverDir()
	dir := b.TempDir()
	env := append(os.Environ(), bridge.EnvDriverDir+"="+drv, "BROWSER_AGENT_DB="+filepath.Join(dir, "audit.db"))
	var walls, plainWalls []time.Duration
	var rss []int64
	b.ResetTimer()
	for i := range b.N {
		cmd := exec.Command(bin, "run", "--preset", "lookup", "--db", filepath.Join(dir, "audit.db"))
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		var peak int64
		go func() {
			defer close(done)
			status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
			for {
				if kb, ok := vmHWM(status); ok {
					peak = max(peak, kb)
				} else {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		err := cmd.Wait()
		wall := time.Since(start)
		<-done
		if err != nil {
			b.Fatalf("run %d: %v\n%s", i, err, stderr.String())
		}
		walls = append(walls, wall)
		rss = append(rss, peak)

		plain := exec.Command(plainBin)
		plain.Env = env
		stderr.Reset()
		plain.Stderr = &stderr
		start = time.Now()
		if err := plain.Run(); err != nil {
			b.Fatalf("plain %d: %v\n%s", i, err, stderr.String())
		}
		plainWalls = append(plainWalls, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(rss)
	b.ReportMetric(ms(median(walls)), "wall-ms")
	b.ReportMetric(ms(median(plainWalls)), "plain-wall-ms")
	b.ReportMetric(float64(median(walls))/float64(median(plainWalls)), "agent/plain")
	b.ReportMetric(float64(rss[len(rss)/2])/1024, "peak-rss-MiB")
	b.ReportMetric(0, "ns/op")
}

// vmHWM reads the peak resident set size, in KiB, from a /proc/PID/status file. It reports false
// once the process is gone (or a zombie, whose status has no VmHWM).
func vmHWM(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// TestVMHWM checks the peak-RSS reader on this process, so that the cold-start benchmark does not
// silently report zero.
func TestVMHWM(t *testing.T) {
	kb, ok := vmHWM("/proc/self/status")
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	if !ok || kb <= 0 {
		t.Fatalf("VmHWM of this process: %d, %v", kb, ok)
	}
}
