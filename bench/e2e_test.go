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

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
	"github.com/mxschmitt/playwright-go"
)

// driverDir is the Playwright driver the bridge uses (scripts/setup installs it).
func driverDir(tb testing.TB) string {
	d, err := bridge.DriverDir()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func chromiumPath(tb testing.TB) string {
	c, err := bridge.ChromiumPath()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// plainLookup is what a plain playwright-go script does for the lookup preset, with no policy,
// proxy or checks: the offline planner's navigations and reads on the same pages (search page:
// text and links; record: text, fields and links; registry B source: text and fields).
type plainLookup struct {
	page   playwright.Page
	origin string
}

const (
	jsLinks  = `() => Array.from(document.querySelectorAll('a[href]'), a => [a.href, a.innerText])`
	jsFields = `() => Array.from(document.querySelectorAll('dl dt'), dt => [dt.innerText, dt.nextElementSibling ? dt.nextElementSibling.innerText : ''])`
)

func (p plainLookup) run(id string) error {
	step := func(url string, links, fields bool) error {
		if _, err := p.page.Goto(url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			return err
		}
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
	srv, err := demosite.Start(ctx, "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	lookupOn(b, ctx, srv.URL, nil, nil, opts...)
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

	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: driverDir(b), SkipInstallBrowsers: true})
	if err != nil {
		b.Fatal(err)
	}
	defer pw.Stop()
	browser, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath:  playwright.String(chromiumPath(b)),
		Headless:        playwright.Bool(true),
		ChromiumSandbox: playwright.Bool(os.Geteuid() != 0),
		Args:            plainArgs,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer browser.Close()
	page, err := browser.NewPage()
	if err != nil {
		b.Fatal(err)
	}
	plain := plainLookup{page: page, origin: origin}

	preset, _ := presets.ByName("lookup")
	c := coordinator.New(pol)
	guardedRun := func() {
		res := c.Run(ctx, coordinator.RunArgs{Task: preset.Task, Preset: preset.Name, Model: offline.New(), Browser: g})
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
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// agentBinary builds cmd/browser-agent once per test binary, into a temporary directory.
func agentBinary(b testing.TB) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bench-browser-agent-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "browser-agent")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/browser-agent/browser-agent/cmd/browser-agent").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return binPath
}

// BenchmarkColdStart runs "browser-agent run --preset lookup" as a new process per iteration: the
// embedded demo site, the audit store, the driver, the egress proxy, a fresh Chromium, the run and
// the shutdown. It reports the median wall time and the median peak RSS (VmHWM) of the
// browser-agent process itself (Chromium and the Node driver excluded), polled from
// /proc/PID/status every 5 ms until the process exits.
//
//	go test ./bench -run '^$' -bench ColdStart -benchtime 5x -count 5
func BenchmarkColdStart(b *testing.B) {
	bin := agentBinary(b)
	drv := driverDir(b)
	dir := b.TempDir()
	var walls []time.Duration
	var rss []int64
	b.ResetTimer()
	for i := range b.N {
		cmd := exec.Command(bin, "run", "--preset", "lookup", "--db", filepath.Join(dir, "audit.db"))
		cmd.Env = append(os.Environ(), bridge.EnvDriverDir+"="+drv, "BROWSER_AGENT_DB="+filepath.Join(dir, "audit.db"))
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
	}
	b.StopTimer()
	slices.Sort(rss)
	b.ReportMetric(ms(median(walls)), "wall-ms")
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
