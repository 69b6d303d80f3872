package queue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/testkit/pgtest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/runner"
	"github.com/browser-agent/browser-agent/web"
)

// TestServeWithExternalWorker is the outgrown shape: "serve --workers 0" only enqueues, a
// "browser-agent worker" process runs the run, and the page's event stream follows it through the
// audit rows: its steps, then its status, under the ID the API gave it. On one SQLite file, and on
// a PostgreSQL server.
func TestServeWithExternalWorker(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { serveWithWorker(t, filepath.Join(t.TempDir(), "audit.db")) })
	t.Run("postgresql", func(t *testing.T) { serveWithWorker(t, pgtest.Start(t)) })
}

func serveWithWorker(t *testing.T, db string) {
	mark := "serve-ext-" + audit.NewRunID()
	start := func(args ...string) (*exec.Cmd, *testutil.Buffer) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), markerVar+"="+mark, "TMPDIR="+t.TempDir())
		var stderr testutil.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		return cmd, &stderr
	}
	// The audit store's tables exist before either process starts; River's are made by whichever
	// starts first (they start at once).
	store, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, serr := start("serve", "--addr", "127.0.0.1:0", "--db", db, "--workers", "0")
	_, werr := start("worker", "--db", db)
	addr := regexp.MustCompile(`serving the live demo on (http://\S+)`)
	var base string
	if !testutil.Eventually(3*time.Minute, func() bool {
		m := addr.FindStringSubmatch(serr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil && strings.Contains(werr.String(), "worker: 1 at a time")
	}) {
		t.Fatalf("not started:\nserve: %s\nworker: %s", serr.String(), werr.String())
	}
	runID, events := testutil.StartLiveRun(t, base, `{"preset":"lookup"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+events, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var result runner.ResultJSON
	steps := 0
	for _, ev := range testutil.ReadEvents(res.Body) {
		switch ev.Name {
		case web.EventResult:
			json.Unmarshal([]byte(ev.Data), &result)
		case web.EventStep:
			steps++
		}
	}
	res.Body.Close()
	if result.Status != "answered" || result.RunID != runID {
		t.Fatalf("result %q (%s) of run %q, want answered for %q\nserve: %s\nworker: %s", result.Status, result.Reason, result.RunID, runID, serr.String(), werr.String())
	}
	r, rsteps, err := store.Run(context.Background(), runID)
	if err != nil || r.Status != "answered" || r.PID == 0 {
		t.Fatalf("audit row: %+v %v", r, err)
	}
	tools := 0
	for _, st := range rsteps {
		if st.Tool != "request" {
			tools++
		}
	}
	if steps != tools || steps == 0 {
		t.Errorf("the stream showed %d steps, the audit has %d", steps, tools)
	}
	// The worker prints its line after the run's result is stored, which is what ended the stream:
	// the line may come a moment after.
	if !testutil.Eventually(30*time.Second, func() bool { return strings.Contains(werr.String(), "run "+runID+": answered") }) {
		t.Errorf("the worker did not run it:\n%s", werr.String())
	}
}
