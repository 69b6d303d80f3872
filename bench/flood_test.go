package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/procs"
	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/policy"
)

// Flood is the page of issue 10: floodImages images of floodImageBytes each, generated as they
// are served (nothing is stored).
const (
	floodImages     = 300
	floodImageBytes = 5 << 20
)

// floodSite serves /flood, a page of floodImages <img>, and /img/N, each floodImageBytes long. It
// counts the image requests and the bytes it sent.
type floodSite struct {
	*httptest.Server
	images atomic.Int64
	sent   atomic.Int64
}

func newFloodSite() *floodSite {
	f := &floodSite{}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/flood", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		b.WriteString("<!doctype html><title>flood</title><h1>Image flood</h1>\n")
		for i := range floodImages {
			fmt.Fprintf(&b, "<img src=\"/img/%d.png\" width=\"8\" height=\"8\">\n", i)
		}
		w.Write([]byte(b.String()))
	})
	mux.HandleFunc("/img/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.images.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", strconv.Itoa(floodImageBytes))
		for left := floodImageBytes; left > 0; {
			n, err := w.Write(chunk[:min(left, len(chunk))])
			f.sent.Add(int64(n))
			if err != nil {
				return
			}
			left -= n
		}
	})
	f.Server = httptest.NewServer(mux)
	return f
}

// procPeaks follows a process and its descendants until it exits: the peak RSS (VmHWM) of the
// process itself, of its Node driver, and the largest sum of the resident sets (VmRSS) of its
// Chromium processes seen in one poll.
type procPeaks struct {
	agentKB, driverKB, chromiumKB int64
}

func followPeaks(pid int, every time.Duration) (stop func() procPeaks) {
	var mu sync.Mutex
	var p procPeaks
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			kb, ok := vmHWM(fmt.Sprintf("/proc/%d/status", pid))
			if !ok {
				return
			}
			var drv, chr int64
			for _, d := range descendants(pid) {
				status := fmt.Sprintf("/proc/%d/status", d)
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", d))
				switch name := strings.TrimSpace(string(comm)); {
				case name == "node":
					if v, ok := vmHWM(status); ok {
						drv = max(drv, v)
					}
				case strings.Contains(name, "chrom"):
					if v, ok := procField(status, "VmRSS:"); ok {
						chr += v
					}
				}
			}
			mu.Lock()
			p.agentKB = max(p.agentKB, kb)
			p.driverKB = max(p.driverKB, drv)
			p.chromiumKB = max(p.chromiumKB, chr)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(every):
			}
		}
	}()
	return func() procPeaks {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return p
	}
}

// descendants lists the processes whose parent chain reaches pid.
func descendants(pid int) []int {
	parent := procs.Parents()
	var out []int
	for n := range parent {
		for p, i := parent[n], 0; p > 1 && i < 64; p, i = parent[p], i+1 {
			if p == pid {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// procField reads a "Name: N kB" line of a /proc/PID/status file, in KiB.
func procField(path, name string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// TestImageFlood runs the real browser-agent binary (egress proxy, bridge, Chromium, a script
// model) on a page of 300 images of 5 MiB each, with the policy's default budgets, and follows the
// resident memory of the agent, its Node driver and Chromium. The run must end blocked with the
// run-bytes budget's reason, having fetched far fewer than the 300 images; the agent's peak RSS
// must stay under a generous bound (a resource promise; the figure itself is logged and goes to
// BENCHMARKS.md). Before the budgets the agent reached 2.58 GB on this page.
//
//	go test ./bench -run ImageFlood -v
func TestImageFlood(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatal("this test reads /proc")
	}
	bin := agentBinary(t)
	drv := testbrowser.DriverDir()
	site := newFloodSite()
	defer site.Close()
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	writeTestFile(t, polFile, fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [/flood, /img/*]\nrecord:\n  id: {pattern: 'SYN-\\d{4}', example: SYN-0042}\n", site.URL))
	scriptFile := filepath.Join(dir, "script.json")
	// How many images one Open gets depends on the machine: the page may be read before its load
	// event, or the Open may time out first. The run's bytes add up over its Opens, so a (hostile)
	// model that opens the page again and again must meet the budget; max_steps bounds the script.
	var steps []string
	for range policy.DefaultMaxSteps - 1 {
		steps = append(steps, `{"call": "open_url", "args": {"url": "`+site.URL+`/flood"}}`)
	}
	steps = append(steps, `{"final": {"cannot_answer": "flood"}}`)
	writeTestFile(t, scriptFile, `{"steps": [`+strings.Join(steps, ",\n")+`]}`)
	cmd := exec.Command(bin, "run", "--task", "Look up SYN-0001", "--policy", polFile, "--model", "script:"+scriptFile,
		"--json", "--db", filepath.Join(dir, "audit.db"))
	cmd.Env = append(os.Environ(), bridge.EnvDriverDir+"="+drv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := followPeaks(cmd.Process.Pid, 10*time.Millisecond)
	werr := cmd.Wait()
	peaks := stop()
	var res struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
		Steps  []struct {
			Tool, Reason, Layer, Rule string
		} `json:"steps"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("run output (exit %v): %v\nstdout: %s\nstderr: %s", werr, err, stdout.String(), stderr.String())
	}
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	t.Logf("image flood (%d × %d MiB): %s: %s after %v", floodImages, floodImageBytes>>20, res.Status, res.Reason, time.Since(start).Round(time.Millisecond))
	t.Logf("images requested from the site: %d, bytes sent: %.1f MiB", site.images.Load(), float64(site.sent.Load())/(1<<20))
	t.Logf("peak RSS: browser-agent %.1f MiB, Node driver %.1f MiB, Chromium (sum of its processes) %.1f MiB",
		mib(peaks.agentKB), mib(peaks.driverKB), mib(peaks.chromiumKB))

	if res.Status != "blocked" || !strings.Contains(res.Reason, policy.ReasonBudgetRunBytes) {
		t.Errorf("run:\n\tgot  %s: %s\n\twant blocked: %s …\nstderr: %s", res.Status, res.Reason, policy.ReasonBudgetRunBytes, stderr.String())
	}
	if n := len(res.Steps); n == 0 || res.Steps[n-1].Reason != policy.ReasonBudgetRunBytes {
		t.Errorf("steps: got %+v, want the last denied with %q", res.Steps, policy.ReasonBudgetRunBytes)
	} else {
		t.Logf("the budget ended the run at step %d (%s)", n, res.Steps[n-1].Tool)
	}
	budget := int64(policy.DefaultMaxRunBytes)
	// Admitted responses finish: at most one body cap per fetch slot past the budget.
	if got, most := site.sent.Load(), budget+int64(policy.DefaultMaxConcurrentRequests+1)*bridge.DefaultBodyCap; got > most {
		t.Errorf("bytes sent by the site: got %d, want at most %d (the run budget and one body per fetch slot)", got, most)
	}
	const bound = 400 << 10 // KiB
	if peaks.agentKB == 0 || peaks.agentKB > bound {
		t.Errorf("peak RSS of browser-agent: got %.1f MiB, want under %d MiB", mib(peaks.agentKB), bound>>10)
	}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
