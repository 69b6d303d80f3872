// Package faults kills the real browser-agent binary, its Chromium and its model server at random
// moments, and checks that the audit store survives: every run that reached the browser has a
// row, every row ends with a terminal status, the file passes SQLite's integrity check, and no
// Chromium, driver or proxy is left behind.
package faults

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

var binary string

func TestMain(m *testing.M) { os.Exit(testbrowser.RunWithBinary(m, &binary)) }

// markerVar is set in the environment of every process a test starts; Chromium and the driver
// inherit it. Other tests' and helpers' browsers on the machine do not have it.
const markerVar = "BROWSER_AGENT_FAULT_MARK"

// proc is a process found with a marker.
type proc struct {
	pid  int
	mark string
	cmd  string
}

// marked lists the live processes (zombies excluded) whose environment holds markerVar with a
// value starting with prefix.
func marked(prefix string) []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	needle := []byte(markerVar + "=" + prefix)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		i := bytes.Index(env, needle)
		if i < 0 || (i > 0 && env[i-1] != 0) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if j := bytes.LastIndexByte(stat, ')'); j >= 0 && len(stat) > j+2 && (stat[j+2] == 'Z' || stat[j+2] == 'X') {
			continue
		}
		val := env[i+len(markerVar)+1:]
		if k := bytes.IndexByte(val, 0); k >= 0 {
			val = val[:k]
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, proc{pid: pid, mark: string(val), cmd: strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}

func isChromium(p proc) bool {
	// The wall's launcher carries Chromium's arguments too, and its own marker; a launcher script
	// (Debian's /usr/bin wrappers, when BROWSER_AGENT_CHROMIUM names one) carries them after sh.
	return strings.Contains(p.cmd, "--user-data-dir=") && !strings.Contains(p.cmd, "--browser-agent-wall=") &&
		!strings.HasPrefix(p.cmd, "/bin/sh ")
}

// command is the binary with args, its environment marked with mark.
func command(t *testing.T, mark string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), markerVar+"="+mark, "TMPDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// row is one run as the store holds it.
type row struct {
	ID, Status, Reason string
	PID                int
	Finished           sql.NullString
}

func rows(t *testing.T, db string) ([]row, string) {
	t.Helper()
	d, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var integrity string
	if err := d.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil {
		t.Fatal(err)
	}
	rs, err := d.Query("SELECT id, status, reason, pid, finished_at FROM runs")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.ID, &r.Status, &r.Reason, &r.PID, &r.Finished); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out, integrity
}

var terminal = map[string]bool{
	"answered": true, "uncertain": true, "blocked": true, "human_action_required": true,
	"rejected": true, "error": true, "interrupted": true,
}

// phase is a moment of a run a kill is timed from.
type phase int

const (
	phaseStart     phase = iota // the process started
	phaseBrowser                // its Chromium appeared
	phaseFirstStep              // it printed its first step
)

func (p phase) String() string { return [...]string{"start", "browser", "first step"}[p] }

// plan is when and how a run is killed.
type plan struct {
	sig   syscall.Signal
	phase phase
	after time.Duration
}

// hasRow reports whether the store at db holds a run of process pid.
func hasRow(db string, pid int) bool {
	d, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return false
	}
	defer d.Close()
	var n int
	if err := d.QueryRow("SELECT COUNT(*) FROM runs WHERE pid = ?", pid).Scan(&n); err != nil {
		return false
	}
	return n > 0
}

// runResult is what one killed run did.
type runResult struct {
	i       int
	plan    plan
	pid     int
	exit    int  // -1 when a signal ended the process
	browser bool // a Chromium of this run was seen
	// rowAtBrowser: when its Chromium was first seen, the run's row was already in the store.
	rowAtBrowser bool
	stdout       string // the --json result, when the run printed one
	signaled     bool   // the signal was sent before the process exited
}

// TestKilledRuns runs the lookup preset 30 times, two at a time, and kills each run with SIGTERM
// or SIGKILL (seeded random) at a random moment of its first seconds.
func TestKilledRuns(t *testing.T) {
	t.Parallel() // each has its own store and process marker
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with FAULT_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	runs, parallel := 30, 2
	if n, err := strconv.Atoi(os.Getenv("FAULT_RUNS")); err == nil && n > 0 {
		runs = n // fewer on a crowded machine while iterating; make test runs 30
	}
	db := filepath.Join(t.TempDir(), "audit.db")
	prefix := fmt.Sprintf("killed-%d-", os.Getpid())

	// A kill moment is a random time after a random phase of the run: its start, its Chromium
	// appearing, its first step. Phases, not wall-clock times, so that a loaded machine, where
	// Chromium takes seconds to start, still gets kills in every part of a run.
	plans := make([]plan, runs)
	for i := range plans {
		plans[i].sig = syscall.SIGTERM
		if rng.IntN(2) == 1 {
			plans[i].sig = syscall.SIGKILL
		}
		plans[i].phase = phase(rng.IntN(3))
		plans[i].after = time.Duration(rng.IntN(1500)) * time.Millisecond
	}

	results := make([]runResult, runs)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = killRun(t, i, prefix+strconv.Itoa(i)+"-", db, plans[i])
		}()
	}
	wg.Wait()

	// No Chromium, driver or proxy (it lives in the binary) of these runs is left.
	if !testutil.Eventually(30*time.Second, func() bool { return len(marked(prefix)) == 0 }) {
		for _, p := range marked(prefix) {
			t.Errorf("left behind: pid %d (%s): %.200s", p.pid, p.mark, p.cmd)
		}
	}

	// The next start of a command that opens the store ends the runs of the killed processes.
	check := command(t, prefix+"check", nil, "audit", "--check", "--json", "--db", db)
	out, err := check.Output()
	if err != nil {
		t.Errorf("audit --check: %v\n%s", err, out)
	}
	var rep struct {
		Integrity []string `json:"integrity"`
		Open      []any    `json:"open"`
		OK        bool     `json:"ok"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || !rep.OK || len(rep.Open) != 0 || len(rep.Integrity) != 1 || rep.Integrity[0] != "ok" {
		t.Errorf("audit --check:\n\tgot  %s (%v)\n\twant ok, integrity [ok], no open runs", out, err)
	}

	got, integrity := rows(t, db)
	if integrity != "ok" {
		t.Errorf("PRAGMA integrity_check:\n\tgot  %s\n\twant ok", integrity)
	}
	byPID := map[int]row{}
	for _, r := range got {
		if !terminal[r.Status] || !r.Finished.Valid {
			t.Errorf("run %s (pid %d): status %q finished %v: not terminal after the next start", r.ID, r.PID, r.Status, r.Finished.Valid)
		}
		byPID[r.PID] = r
	}
	counts := map[string]int{}
	browsers := 0
	for _, res := range results {
		if res.browser {
			browsers++
			if !res.rowAtBrowser {
				t.Errorf("run %d (pid %d): its Chromium ran before its row was in the audit store", res.i, res.pid)
			}
		}
	}
	if browsers == 0 {
		t.Fatalf("no run reached the browser: the kills tested nothing (results %+v)", results)
	}
	for _, res := range results {
		r, ok := byPID[res.pid]
		name := fmt.Sprintf("run %d (%s %v after %s, pid %d, exit %d)", res.i, res.plan.sig, res.plan.after, res.plan.phase, res.pid, res.exit)
		switch {
		case !ok && res.browser:
			t.Errorf("%s: its Chromium was seen but the audit has no row for it", name)
			continue
		case !ok && res.exit >= 0:
			t.Errorf("%s: exited with %d but the audit has no row for it", name, res.exit)
			continue
		case !ok:
			counts["killed before the run was recorded"]++
			continue
		}
		counts[r.Status]++
		switch {
		case res.exit == -1 && res.plan.sig == syscall.SIGKILL:
			// Killed: the next start found it running and ended it, unless it had ended already.
			if r.Status == "interrupted" && r.Reason != fmt.Sprintf("crashed: process %d ended before the run's end was recorded", res.pid) {
				t.Errorf("%s: reason %q, want the crash reason", name, r.Reason)
			}
		case res.exit == 143:
			want := "interrupted: SIGTERM received"
			if r.Status != "interrupted" || r.Reason != want {
				t.Errorf("%s:\n\tgot  %s %q\n\twant interrupted %q", name, r.Status, r.Reason, want)
			}
			var j struct{ Status, Reason string }
			if err := json.Unmarshal([]byte(res.stdout), &j); err != nil || j.Status != "interrupted" || j.Reason != want {
				t.Errorf("%s: stdout %q, want the interrupted result", name, res.stdout)
			}
		case res.exit >= 0:
			var j struct {
				Status string `json:"status"`
			}
			json.Unmarshal([]byte(res.stdout), &j)
			if j.Status != r.Status {
				t.Errorf("%s: stdout status %q, audit %q", name, j.Status, r.Status)
			}
		}
	}
	t.Logf("outcomes: %v; %d of %d runs reached the browser", counts, browsers, runs)
}

// killRun starts one run and sends it p.sig p.after the phase p.phase; it watches for the run's
// Chromium until the process ends.
func killRun(t *testing.T, i int, mark, db string, p plan) runResult {
	res := runResult{i: i, plan: p, exit: -1}
	cmd := command(t, mark, nil, "run", "--preset", "lookup", "--json", "--db", db)
	var stdout bytes.Buffer
	var stderr testutil.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Errorf("run %d: %v", i, err)
		return res
	}
	res.pid = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var fire, hung <-chan time.Time
	arm := func() {
		if fire == nil && !res.signaled {
			fire = time.After(p.after)
		}
	}
	if p.phase == phaseStart {
		arm()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-fire:
			fire = nil
			res.signaled = true
			cmd.Process.Signal(p.sig)
			hung = time.After(3 * time.Minute)
		case <-hung:
			t.Errorf("run %d did not exit 3 min after %s:\n%s", i, p.sig, stderr.String())
			cmd.Process.Kill()
			hung = nil
		case <-tick.C:
			if !res.browser {
				for _, q := range marked(mark) {
					if isChromium(q) {
						res.browser = true
					}
				}
				if res.browser {
					// Write ahead: the run is in the store before its browser exists.
					res.rowAtBrowser = hasRow(db, res.pid)
				}
			}
			if res.browser && p.phase == phaseBrowser || p.phase == phaseFirstStep && strings.Contains(stderr.String(), "step 1:") {
				arm()
			}
		}
	}
	if code, ok := testutil.ExitCode(err); ok && code >= 0 {
		res.exit = code
	}
	res.stdout = stdout.String()
	if res.exit == 1 || res.exit == 2 {
		t.Logf("run %d exited %d: %s", i, res.exit, stderr.String())
	}
	return res
}

// chromiumOf waits for the Chromium of the run marked mark and returns its browser process (the
// one without --type=).
func chromiumOf(t *testing.T, mark string) int {
	t.Helper()
	pid := 0
	testutil.Eventually(60*time.Second, func() bool {
		for _, p := range marked(mark) {
			if isChromium(p) && !strings.Contains(p.cmd, "--type=") {
				pid = p.pid
				return true
			}
		}
		return false
	})
	if pid == 0 {
		t.Fatalf("no Chromium of %s appeared", mark)
	}
	return pid
}

// modelServer is a fake OpenAI-compatible server whose first answer waits until release is closed
// and then asks to open url; later answers give up.
func modelServer(t *testing.T, url func() string, asked chan<- struct{}, release <-chan struct{}) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if k == 1 {
			close(asked)
			<-release
			args, _ := json.Marshal(map[string]string{"url": url()})
			msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "open_url", "arguments": string(args)}}}}
			writeCompletion(w, msg)
			return
		}
		writeCompletion(w, map[string]any{"role": "assistant", "content": `{"cannot_answer":"stopped"}`})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func writeCompletion(w http.ResponseWriter, msg map[string]any) {
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

// demoURL is the demo site's address the binary printed on stderr.
func demoURL(stderr *testutil.Buffer) string {
	s := stderr.String()
	const p = "demo site at "
	i := strings.Index(s, p)
	if i < 0 {
		return ""
	}
	s = s[i+len(p):]
	if j := strings.IndexAny(s, " \n"); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestChromiumKilledMidRun kills the run's Chromium while the model thinks; the next browser call
// finds it gone and the run ends error with a reason that names the part and what to do.
func TestChromiumKilledMidRun(t *testing.T) {
	t.Parallel() // each has its own store and process marker
	db := filepath.Join(t.TempDir(), "audit.db")
	mark := fmt.Sprintf("chromium-%d", os.Getpid())
	release := make(chan struct{})
	var stdout bytes.Buffer
	var stderr testutil.Buffer
	asked := make(chan struct{})
	srv := modelServer(t, func() string { return demoURL(&stderr) + "/records/SYN-0042" }, asked, release)
	cmd := command(t, mark, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test", "BROWSER_AGENT_DEBUG=1"},
		"run", "--task", "Look up SYN-0042", "--model", "openai:gpt-4.1-mini", "--json", "--db", db)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The model is asked once the browser is up: the run is under way.
	select {
	case <-asked:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the model was never asked\n%s", stderr.String())
	}
	pid := chromiumOf(t, mark)
	syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(30*time.Second, func() bool {
		for _, p := range marked(mark) {
			if p.pid == pid {
				return false
			}
		}
		return true
	})
	close(release)
	err := cmd.Wait()
	if code, _ := testutil.ExitCode(err); code != 1 {
		t.Errorf("exit: got %v, want 1\n%s", err, stderr.String())
	}
	want := "browser: Chromium or its driver exited during the run (killed, crashed or out of memory); run the task again"
	var j struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &j); err != nil || j.Status != "error" || j.Reason != want {
		t.Errorf("result:\n\tgot  %s\n\twant status error, reason %q", stdout.String(), want)
	}
	got, _ := rows(t, db)
	if len(got) != 1 || got[0].ID != j.RunID || got[0].Status != "error" || got[0].Reason != want {
		t.Errorf("audit:\n\tgot  %+v\n\twant run %s error %q", got, j.RunID, want)
	}
	if !testutil.Eventually(30*time.Second, func() bool { return len(marked(mark)) == 0 }) {
		t.Errorf("left behind: %v", marked(mark))
	}
}

// sseResult is what one event stream said: the last result event and whether the end came.
type sseResult struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Reason string `json:"reason"`
	ended  bool
}

func readStream(url string) (sseResult, error) {
	var out sseResult
	res, err := http.Get(url)
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	event := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			if v == "end" {
				out.ended = true
			}
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && event == "result" {
			json.Unmarshal([]byte(v), &out)
		}
	}
	return out, err
}

// TestServeSIGTERM sends SIGTERM to serve while two live runs go on: one finishes within the
// drain time, the other is interrupted after it. Both streams end with a result and the end event,
// and the audit store says what the streams said.
func TestServeSIGTERM(t *testing.T) {
	// Not parallel: its first run must finish within the drain time.
	db := filepath.Join(t.TempDir(), "audit.db")
	mark := fmt.Sprintf("serve-%d", os.Getpid())
	sigSent := make(chan struct{})
	asked := map[string]chan struct{}{"SYN-0042": make(chan struct{}), "SYN-0043": make(chan struct{})}
	var once sync.Map
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for id, ch := range asked {
			if bytes.Contains(body, []byte(id)) {
				if _, loaded := once.LoadOrStore(id, true); !loaded {
					close(ch)
				}
				if id == "SYN-0043" { // thinks until the run is interrupted
					<-r.Context().Done()
					return
				}
			}
		}
		select { // answers once serve is stopping: the run ends within the drain time
		case <-sigSent:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		writeCompletion(w, map[string]any{"role": "assistant", "content": `{"cannot_answer":"not found"}`})
	}))
	defer model.Close()
	var stderr testutil.Buffer
	cmd := command(t, mark, []string{"OPENAI_BASE_URL=" + model.URL + "/v1", "OPENAI_API_KEY=sk-test"},
		"serve", "--addr", "127.0.0.1:0", "--db", db, "--concurrent", "2", "--drain", "5s", "--model", "openai:gpt-4.1-mini")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var base string
	if !testutil.Eventually(2*time.Minute, func() bool {
		s := stderr.String()
		const p = "serving the live demo on "
		if i := strings.Index(s, p); i >= 0 {
			base = strings.Fields(s[i+len(p):])[0]
			return true
		}
		return false
	}) {
		t.Fatalf("serve did not listen:\n%s", stderr.String())
	}
	type stream struct {
		res sseResult
		err error
	}
	streams := map[string]chan stream{}
	for id := range asked {
		res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(`{"task":"Look up `+id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			Events string `json:"events"`
		}
		json.NewDecoder(res.Body).Decode(&created)
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted || created.Events == "" {
			t.Fatalf("POST %s: %d", id, res.StatusCode)
		}
		ch := make(chan stream, 1)
		streams[id] = ch
		go func() {
			r, err := readStream(base + created.Events)
			ch <- stream{r, err}
		}()
	}
	for id, ch := range asked {
		select {
		case <-ch:
		case <-time.After(3 * time.Minute):
			t.Fatalf("the run of %s never asked the model:\n%s", id, stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	close(sigSent)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, stderr.String())
	}
	want := map[string]sseResult{
		"SYN-0042": {Status: "blocked", Reason: "model could not answer"},
		"SYN-0043": {Status: "interrupted", Reason: "interrupted: the server is stopping"},
	}
	got := map[string]sseResult{}
	for id, ch := range streams {
		s := <-ch
		if s.err != nil || !s.res.ended || s.res.Status != want[id].Status || s.res.Reason != want[id].Reason {
			t.Errorf("stream of %s:\n\tgot  %+v (%v)\n\twant %s %q and the end event", id, s.res, s.err, want[id].Status, want[id].Reason)
		}
		got[id] = s.res
	}
	rs, integrity := rows(t, db)
	if integrity != "ok" || len(rs) != 2 {
		t.Fatalf("audit: integrity %s, %d runs, want ok and 2", integrity, len(rs))
	}
	for _, r := range rs {
		found := false
		for _, s := range got {
			if s.RunID == r.ID {
				found = true
				if s.Status != r.Status || s.Reason != r.Reason {
					t.Errorf("run %s: audit %s %q, stream %s %q", r.ID, r.Status, r.Reason, s.Status, s.Reason)
				}
			}
		}
		if !found {
			t.Errorf("run %s (%s) of the audit was in no stream", r.ID, r.Status)
		}
	}
	if !testutil.Eventually(30*time.Second, func() bool { return len(marked(mark)) == 0 }) {
		t.Errorf("left behind: %v", marked(mark))
	}
}
