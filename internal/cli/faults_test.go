package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// TestModelServerFailures fails the model server in each way it can, and checks the run's exact
// status and reason on stdout and in the audit store: the reason names the part and what to do.
func TestModelServerFailures(t *testing.T) {
	fakeRun(t)
	const model = "openai:gpt-4.1-mini"
	tests := []struct {
		name   string
		serve  http.HandlerFunc
		reason string
	}{
		{"5xx", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After-Ms", "1") // the retries come at once
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		}, "model server: " + model + " answered HTTP 503 Service Unavailable; try again later or check the server"},
		{"malformed json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","choices":[{"message":{"role":"assistant","content":hi}}]}`)
		}, "model server: " + model + " sent a response that is not valid JSON; check that the server speaks the OpenAI API"},
		{"endless stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","choices":[{"message":{"role":"assistant","content":"`)
			chunk := []byte(strings.Repeat("a", 64<<10))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "model server: " + model + " sent a response without end (over 8 MiB); check the server"},
		{"killed mid-answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":"x","choices":[{"message":`)
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // the server dies with the answer half sent
			}
		}, "model server: " + model + " closed the connection mid-answer; check that the server runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.serve)
			defer srv.Close()
			t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
			db := filepath.Join(t.TempDir(), "audit.db")
			code, stdout, stderr := runCLI(t, "run", "--task", "Look up SYN-0042", "--model", model, "--json", "--db", db)
			r := decodeRun(t, stdout)
			if code != ExitFailure || r.Status != coordinator.StatusError || r.Reason != tt.reason {
				t.Fatalf("run:\n\tgot  exit %d, %s %q\n\twant exit %d, error %q\n%s", code, r.Status, r.Reason, ExitFailure, tt.reason, stderr)
			}
			a, _ := auditOf(t, db, r.RunID)
			if a.Status != string(coordinator.StatusError) || a.Reason != tt.reason || a.FinishedAt.IsZero() {
				t.Errorf("audit:\n\tgot  %s %q\n\twant error %q", a.Status, a.Reason, tt.reason)
			}
		})
	}
}

// auditOf is the run named id, and its steps, as the audit store at db holds them.
func auditOf(t *testing.T, db, id string) (audit.Run, []audit.Step) {
	t.Helper()
	s, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, steps, err := s.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return r, steps
}

// newStore creates an empty audit store at db and closes it.
func newStore(t *testing.T, db string) string {
	t.Helper()
	s, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return db
}

// TestStoreUnwritableFailsClosed: an audit store that cannot be written ends the run before any
// browser work, with a reason that names the store and what to do.
func TestStoreUnwritableFailsClosed(t *testing.T) {
	fakeRun(t)
	noLaunch(t)
	readOnly := func(t *testing.T) string {
		db := newStore(t, filepath.Join(t.TempDir(), "audit.db"))
		testutil.ReadOnly(t, db)
		return db
	}
	fullDisk := func(t *testing.T) string {
		dir := testutil.SmallDisk(t, 512<<10)
		db := newStore(t, filepath.Join(dir, "audit.db"))
		testutil.FillDisk(t, dir)
		return db
	}
	tests := []struct {
		name   string
		db     func(t *testing.T) string
		reason string
	}{
		{"read-only file", readOnly, ": read-only; make it writable or give another --db"},
		{"full disk", fullDisk, ": disk full; free space on its disk or give another --db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := tt.db(t)
			code, stdout, stderr := runCLI(t, "run", "--preset", "lookup", "--json", "--db", db)
			r := decodeRun(t, stdout)
			want := "audit store: " + db + tt.reason
			if code != ExitFailure || r.Status != coordinator.StatusError || r.Reason != want || len(r.Steps) != 0 {
				t.Errorf("run:\n\tgot  exit %d, %s %q, %d steps\n\twant exit %d, error %q, no steps\n%s", code, r.Status, r.Reason, len(r.Steps), ExitFailure, want, stderr)
			}
		})
	}
}

// TestStoreFullMidRun: the disk fills during a run; the next write fails, the run ends at once as
// an error naming the store, and no further browser work happens.
func TestStoreFullMidRun(t *testing.T) {
	fakeRun(t)
	dir := testutil.SmallDisk(t, 512<<10)
	db := filepath.Join(dir, "audit.db")
	var b *browsertest.HTTP
	launchBrowser = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		b = browsertest.NewHTTP(pol)
		return fillingBrowser{b, func() { testutil.FillDisk(t, dir) }}, b, nil
	}
	code, stdout, stderr := runCLI(t, "run", "--preset", "lookup", "--json", "--db", db)
	r := decodeRun(t, stdout)
	want := "audit store: " + db + ": disk full; free space on its disk or give another --db"
	if code != ExitFailure || r.Status != coordinator.StatusError || r.Reason != want {
		t.Fatalf("run:\n\tgot  exit %d, %s %q\n\twant exit %d, error %q\n%s", code, r.Status, r.Reason, ExitFailure, want, stderr)
	}
	if n := len(b.Opened()); n != 1 {
		t.Errorf("pages opened: got %d, want 1 (the run stops at the first step it cannot record)", n)
	}
	// Space comes back. The run's end could not be written; its process (this test) still runs,
	// so the row stays running until a start after this process has ended.
	os.Remove(filepath.Join(dir, "filler"))
	a, steps := auditOf(t, db, r.RunID)
	if a.Status != audit.StatusRunning || len(steps) != 0 {
		t.Errorf("audit after the disk filled:\n\tgot  %s, %d steps\n\twant running (its end could not be written), 0 steps", a.Status, len(steps))
	}
}

// fillingBrowser fills the disk at the first page it opens.
type fillingBrowser struct {
	*browsertest.HTTP
	fill func()
}

func (f fillingBrowser) Open(ctx context.Context, url string) (p bridge.Page, err error) {
	p, err = f.HTTP.Open(ctx, url)
	f.fill()
	return p, err
}

// TestAuditCheck: a run left running by a dead process is ended at the next start and named on
// stderr; --check then finds the file sound and nothing open. A run of a live process stays open
// and is listed, and that is not a failure.
func TestAuditCheck(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	s, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	dead.Run()
	ctx := context.Background()
	s.BeginRun(ctx, audit.Run{ID: "gone", PID: dead.Process.Pid, ProcStart: "boot:1"})
	s.BeginRun(ctx, audit.Run{ID: "live"}) // this process
	s.Close()

	code, stdout, stderr := runCLI(t, "audit", "--check", "--db", db)
	if code != ExitOK {
		t.Fatalf("audit --check: exit %d\n%s%s", code, stdout, stderr)
	}
	wantErr := fmt.Sprintf("audit: run gone was left running; marked interrupted (crashed: process %d ended before the run's end was recorded)\n", dead.Process.Pid)
	if stderr != wantErr {
		t.Errorf("stderr:\n\tgot  %q\n\twant %q", stderr, wantErr)
	}
	if !strings.HasPrefix(stdout, "integrity: ok\nrun live: running since ") || !strings.HasSuffix(stdout, ": its process is running\n") {
		t.Errorf("stdout:\n\tgot  %q\n\twant integrity ok and the live run", stdout)
	}
	// A damaged file fails the check.
	data, _ := os.ReadFile(db)
	for i := 4096; i < len(data) && i < 8192; i++ {
		data[i] ^= 0xff
	}
	os.WriteFile(db, data, 0o600)
	if code, stdout, stderr := runCLI(t, "audit", "--check", "--db", db); code != ExitFailure {
		t.Errorf("audit --check of a damaged file: exit %d, want %d\n%s%s", code, ExitFailure, stdout, stderr)
	}
}
