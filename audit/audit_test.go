package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/policy"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// begin begins an empty run in s and returns its id.
func begin(t *testing.T, s *Store) string {
	t.Helper()
	id, err := s.BeginRun(context.Background(), Run{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "audit.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func pragma(t *testing.T, s *Store, name string) string {
	t.Helper()
	var v string
	if err := s.db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpenSettingsAndIdempotentMigrations(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	for _, tc := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{"foreign_keys", "1"},
		{"user_version", fmt.Sprint(SchemaVersion())},
	} {
		if got := pragma(t, s, tc.pragma); got != tc.want {
			t.Errorf("PRAGMA %s:\n\tgot  %s\n\twant %s", tc.pragma, got, tc.want)
		}
	}
	id, err := s.BeginRun(ctx, Run{Preset: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("database mode:\n\tgot  %o\n\twant %o", got, 0o600)
	}

	// Re-opening applies nothing and keeps the data.
	for i := 0; i < 2; i++ {
		s2, err := Open(path)
		if err != nil {
			t.Fatalf("re-Open #%d: %v", i+1, err)
		}
		if got, want := pragma(t, s2, "user_version"), fmt.Sprint(SchemaVersion()); got != want {
			t.Errorf("user_version after re-open:\n\tgot  %s\n\twant %s", got, want)
		}
		if _, _, err := s2.Run(ctx, id); err != nil {
			t.Errorf("Run(%s) after re-open: %v", id, err)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	_, path := openTemp(t)
	// Stamp the file as if a newer program had written it.
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema: got nil error, want *SchemaError")
	}
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("Open error:\n\tgot  %T %v\n\twant *SchemaError", err, err)
	}
	if se.Version != SchemaVersion()+1 || se.Supported != SchemaVersion() {
		t.Errorf("SchemaError:\n\tgot  version %d supported %d\n\twant version %d supported %d",
			se.Version, se.Supported, SchemaVersion()+1, SchemaVersion())
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("errors.Is(%v, ErrSchemaTooNew) = false", err)
	}
}

func TestOpenMemory(t *testing.T) {
	s, err := Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(context.Background(), Run{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Run(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	start := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.FixedZone("x", 3600))
	id, err := s.BeginRun(ctx, Run{StartedAt: start, RecordID: "R-1042", Preset: "demo", Model: "openai:gpt-4.1-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("generated run id:\n\tgot  %q\n\twant 16 lowercase hex", id)
	}
	steps := []Step{
		{RunID: id, Tool: "open", URL: "http://127.0.0.1:8080/records/R-1042", Duration: 1500 * time.Millisecond, BytesReturned: 2048, Entry: policy.Entry{N: 1, Verdict: policy.Allow, Rule: "http://127.0.0.1:8080 read /records/{id}", Reason: "allowed read route", Layer: policy.LayerPolicy}},
		{RunID: id, Tool: "open", URL: "http://127.0.0.1:8080/admin/delete", Entry: policy.Entry{N: 2, Verdict: policy.Deny, Rule: `write word "delete" in path`, Reason: "write word in url", Layer: policy.LayerPolicy}},
		{RunID: id, Tool: "open", URL: "http://evil.example/", Duration: 3 * time.Millisecond, Entry: policy.Entry{N: 2, Verdict: policy.Deny, Reason: "host not allowed", Layer: policy.LayerProxy}},
	}
	before := time.Now()
	for _, st := range steps {
		if err := s.AddStep(ctx, st); err != nil {
			t.Fatalf("AddStep(%d): %v", st.N, err)
		}
	}
	after := time.Now()
	end := start.Add(42 * time.Second)
	fin := Run{ID: id, FinishedAt: end, Status: "answered", Reason: "evidence backs every value", StepCount: 2,
		PromptTokens: 1200, CompletionTokens: 300, ModelTurns: 4, CostUSD: 0.00096, Simulated: true,
		Wall: "on: network namespace with loopback only (root)"}
	if err := s.FinishRun(ctx, fin); err != nil {
		t.Fatal(err)
	}

	gotRun, gotSteps, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantRun := Run{ID: id, StartedAt: start.UTC(), FinishedAt: end.UTC(), RecordID: "R-1042", Preset: "demo",
		Model: "openai:gpt-4.1-mini", Status: "answered", Reason: "evidence backs every value", StepCount: 2,
		PromptTokens: 1200, CompletionTokens: 300, ModelTurns: 4, CostUSD: 0.00096, Simulated: true,
		PID: os.Getpid(), ProcStart: ProcessMarker(os.Getpid()), Kind: KindRun,
		Wall: "on: network namespace with loopback only (root)"}
	if !reflect.DeepEqual(gotRun, wantRun) {
		t.Errorf("Run:\n\tgot  %+v\n\twant %+v", gotRun, wantRun)
	}
	wantSteps := []Step{
		{RunID: id, Tool: "open", Duration: 1500 * time.Millisecond, BytesReturned: 2048, Entry: policy.Entry{N: 1, Origin: "http://127.0.0.1:8080", Path: "/records/R-1042", Verdict: policy.Allow, Rule: "http://127.0.0.1:8080 read /records/{id}", Reason: "allowed read route", Layer: policy.LayerPolicy}},
		{RunID: id, Tool: "open", Entry: policy.Entry{N: 2, Origin: "http://127.0.0.1:8080", Path: "/admin/delete", Verdict: policy.Deny, Rule: `write word "delete" in path`, Reason: "write word in url", Layer: policy.LayerPolicy}},
		{RunID: id, Tool: "open", Duration: 3 * time.Millisecond, Entry: policy.Entry{N: 2, Origin: "http://evil.example", Path: "/", Verdict: policy.Deny, Reason: "host not allowed", Layer: policy.LayerProxy}},
	}
	for i := range gotSteps {
		// Each step carries the time it was committed; the rest is compared exactly.
		if at := gotSteps[i].RecordedAt; at.Before(before.Add(-time.Microsecond)) || at.After(after) {
			t.Errorf("steps[%d].RecordedAt:\n\tgot  %v\n\twant between %v and %v", i, at, before, after)
		}
		gotSteps[i].RecordedAt = time.Time{}
	}
	if !reflect.DeepEqual(gotSteps, wantSteps) {
		t.Errorf("steps:\n\tgot  %+v\n\twant %+v", gotSteps, wantSteps)
	}

	// Simulated only turns on, and an empty Wall keeps the one recorded: a later FinishRun without
	// them keeps them.
	fin.Simulated, fin.Wall = false, ""
	if err := s.FinishRun(ctx, fin); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := s.Run(ctx, id); !r.Simulated || r.Wall != wantRun.Wall {
		t.Errorf("after FinishRun(Simulated: false, Wall: \"\"):\n\tgot  %v %q\n\twant true %q", r.Simulated, r.Wall, wantRun.Wall)
	}
}

func TestBeginRunIDs(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	got, err := s.BeginRun(ctx, Run{ID: "0123456789abcdef"})
	if err != nil || got != "0123456789abcdef" {
		t.Errorf("BeginRun(given id):\n\tgot  %q, %v\n\twant %q, nil", got, err, "0123456789abcdef")
	}
	if _, err := s.BeginRun(ctx, Run{ID: "0123456789abcdef"}); err == nil {
		t.Errorf("BeginRun(duplicate id): got nil error")
	}
	for _, bad := range []string{"has space", "a?token=x", strings.Repeat("a", 65), "semi;colon"} {
		if _, err := s.BeginRun(ctx, Run{ID: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("BeginRun(ID %q):\n\tgot  %v\n\twant ErrInvalid", bad, err)
		}
	}
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := NewRunID()
		if seen[id] {
			t.Fatalf("NewRunID repeated %s", id)
		}
		seen[id] = true
	}
}

func TestSanitizeStep(t *testing.T) {
	long := strings.Repeat("x", 500)
	tests := []struct {
		name string
		in   Step
		want Step
	}{
		{"query fragment and userinfo stripped",
			Step{URL: "https://user:pw@Example.COM:8443/a/./b/../c?token=SECRET-XYZ#frag-SECRET"},
			Step{Entry: policy.Entry{Origin: "https://example.com:8443", Path: "/a/c"}}},
		{"default port dropped", Step{URL: "http://h:80/p?q"}, Step{Entry: policy.Entry{Origin: "http://h", Path: "/p"}}},
		{"encoded question mark stays in path", Step{URL: "http://h/%3Fx?y=1"}, Step{Entry: policy.Entry{Origin: "http://h", Path: "/%3Fx"}}},
		{"unparseable url stores nothing", Step{URL: "not a url ?token=SECRET-XYZ"}, Step{}},
		{"bad host stores nothing", Step{URL: "https://exa mple.com/?token=SECRET-XYZ"}, Step{}},
		{"data url keeps only the scheme", Step{URL: "data:text/html,SECRET-XYZ"}, Step{Entry: policy.Entry{Origin: "data:"}}},
		{"javascript url keeps only the scheme", Step{URL: "javascript:alert('SECRET')"}, Step{Entry: policy.Entry{Origin: "javascript:"}}},
		{"about blank", Step{URL: "about:blank"}, Step{Entry: policy.Entry{Origin: "about:", Path: "blank"}}},
		{"origin and path without url are re-derived",
			Step{Entry: policy.Entry{Origin: "https://u:p@h", Path: "/x?token=SECRET-XYZ"}}, Step{Entry: policy.Entry{Origin: "https://h", Path: "/x"}}},
		{"idn host in punycode", Step{URL: "http://ÄÖ.de/ä"}, Step{Entry: policy.Entry{Origin: "http://xn--4ca0b.de", Path: "/%C3%A4"}}},
		{"reason and rule cut at query and fragment",
			Step{Entry: policy.Entry{Rule: "open https://h/x?token=SECRET-XYZ", Reason: "see https://h/#frag-SECRET"}},
			Step{Entry: policy.Entry{Rule: "open https://h/x", Reason: "see https://h/"}}},
		{"userinfo dropped from reason and rule",
			Step{Entry: policy.Entry{Rule: "open https://alice:hunter2@h/x", Reason: "at ftp://bob@h and //carol:pw@h"}},
			Step{Entry: policy.Entry{Rule: "open https://h/x", Reason: "at ftp://h and //h"}}},
		{"reason and rule bounded", Step{Entry: policy.Entry{Rule: long, Reason: long}},
			Step{Entry: policy.Entry{Rule: long[:MaxReasonLen], Reason: long[:MaxReasonLen]}}},
		{"bound keeps utf-8 whole", Step{Entry: policy.Entry{Reason: strings.Repeat("é", 150)}},
			Step{Entry: policy.Entry{Reason: strings.Repeat("é", MaxReasonLen/2)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Sanitize(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Sanitize(%+v):\n\tgot  %+v\n\twant %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRunReasonBounded(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	id := begin(t, s)
	reason := "blocked https://h/x?token=SECRET-XYZ"
	if err := s.FinishRun(ctx, Run{ID: id, Status: "refused", Reason: reason}); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := "blocked https://h/x"; r.Reason != want {
		t.Errorf("run reason:\n\tgot  %q\n\twant %q", r.Reason, want)
	}
	if err := s.FinishRun(ctx, Run{ID: id, Reason: strings.Repeat("r", 1000)}); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := s.Run(ctx, id); len(r.Reason) != MaxReasonLen {
		t.Errorf("len(run reason):\n\tgot  %d\n\twant %d", len(r.Reason), MaxReasonLen)
	}
}

// TestNoSecretsOnDisk plants a query string, a fragment and userinfo in every text a caller could
// hand the store, and checks that none reaches the database file or its WAL.
func TestNoSecretsOnDisk(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	secrets := []string{"SECRET-XYZ", "frag-SECRET", "hunter2", "alice"}
	url := "https://alice:hunter2@records.example:8443/records/R-7?token=SECRET-XYZ#frag-SECRET"
	id, err := s.BeginRun(ctx, Run{Preset: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		st := Step{RunID: id, Tool: "open", URL: url, Entry: policy.Entry{N: i, Verdict: policy.Deny, Layer: policy.LayerBrowser, Rule: "open " + url, Reason: "denied " + url}}
		if err := s.AddStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddStep(ctx, Step{RunID: id, Tool: "open", Entry: policy.Entry{N: 99, Origin: "https://alice:hunter2@records.example", Path: "/x?token=SECRET-XYZ#frag-SECRET", Layer: policy.LayerPolicy}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, Run{ID: id, Status: "refused", Reason: "refused " + url}); err != nil {
		t.Fatal(err)
	}

	check := func(when string) {
		t.Helper()
		for _, f := range []string{path, path + "-wal"} {
			data, err := os.ReadFile(f)
			if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f, "-wal") && when == "after close" {
				continue // the last close checkpoints and removes the WAL
			}
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if !bytes.Contains(data, []byte("/records/R-7")) && strings.HasSuffix(f, "-wal") {
				t.Errorf("%s: %s does not hold the stored path; the test checks the wrong file", when, filepath.Base(f))
			}
			for _, sec := range secrets {
				if bytes.Contains(data, []byte(sec)) {
					t.Errorf("%s: %s contains %q", when, filepath.Base(f), sec)
				}
			}
		}
	}
	check("while open")
	_, steps, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := steps[0].Origin+steps[0].Path, "https://records.example:8443/records/R-7"; got != want {
		t.Errorf("stored origin+path:\n\tgot  %q\n\twant %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("after close")
}

func TestConcurrentAddStep(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	id := begin(t, s)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				st := Step{RunID: id, Tool: "read", URL: fmt.Sprintf("http://h/p/%d", w), Entry: policy.Entry{N: w*each + i, Layer: policy.LayerCoordinator}}
				if err := s.AddStep(ctx, st); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AddStep: %v", err)
	}
	_, steps, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != workers*each {
		t.Fatalf("steps:\n\tgot  %d\n\twant %d", len(steps), workers*each)
	}
	for i, st := range steps {
		if st.N != i {
			t.Fatalf("steps[%d].N:\n\tgot  %d\n\twant %d", i, st.N, i)
		}
	}
}

func TestDurableAcrossReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	id, err := s.BeginRun(ctx, Run{Model: "offline"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddStep(ctx, Step{RunID: id, Tool: "search", URL: "http://h/search?q=private", Entry: policy.Entry{N: 1, Layer: policy.LayerPolicy}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, Run{ID: id, Status: "answered", StepCount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r, steps, err := s2.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "answered" || r.FinishedAt.IsZero() || r.StepCount != 1 || len(steps) != 1 {
		t.Errorf("after reopen:\n\tgot  status %q finished %v step_count %d steps %d\n\twant status \"answered\" finished set step_count 1 steps 1",
			r.Status, r.FinishedAt, r.StepCount, len(steps))
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	tests := []struct {
		name string
		do   func() error
	}{
		{"Run", func() error { _, _, err := s.Run(ctx, "feedfacefeedface"); return err }},
		{"Run with a malformed id", func() error { _, _, err := s.Run(ctx, "x?y"); return err }},
		{"FinishRun", func() error { return s.FinishRun(ctx, Run{ID: "feedfacefeedface", Status: "x"}) }},
		{"AddStep", func() error {
			return s.AddStep(ctx, Step{RunID: "feedfacefeedface", Entry: policy.Entry{N: 1, Layer: policy.LayerPolicy}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s(missing run):\n\tgot  %v\n\twant ErrNotFound", tc.name, err)
			}
		})
	}
}

func TestAddStepRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	id := begin(t, s)
	tests := []struct {
		name string
		st   Step
	}{
		{"unknown layer", Step{RunID: id, Entry: policy.Entry{Layer: "kernel"}}},
		{"empty layer", Step{RunID: id}},
		{"empty run id", Step{Entry: policy.Entry{Layer: policy.LayerPolicy}}},
		{"negative bytes", Step{RunID: id, BytesReturned: -1, Entry: policy.Entry{Layer: policy.LayerPolicy}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.AddStep(ctx, tc.st); !errors.Is(err, ErrInvalid) {
				t.Errorf("AddStep(%+v):\n\tgot  %v\n\twant ErrInvalid", tc.st, err)
			}
		})
	}
}

func TestRunsNewestFirst(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range []time.Duration{2 * time.Hour, 0, time.Hour, 500 * time.Millisecond} {
		if _, err := s.BeginRun(ctx, Run{ID: fmt.Sprintf("run%d", i), StartedAt: base.Add(d)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{"run0", "run2", "run3", "run1"}},
		{2, []string{"run0", "run2"}},
		{10, []string{"run0", "run2", "run3", "run1"}},
	}
	for _, tc := range tests {
		runs, err := s.Runs(ctx, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Runs(%d):\n\tgot  %v\n\twant %v", tc.limit, got, tc.want)
		}
	}
}

func TestSpendLedger(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	for _, a := range []struct {
		day string
		usd float64
	}{{"2025-06-01", 0.25}, {"2025-06-01", 0.5}, {"2025-06-02", 1.0}, {"2025-06-01", 0}} {
		if err := s.AddSpend(ctx, a.day, a.usd); err != nil {
			t.Fatalf("AddSpend(%s, %v): %v", a.day, a.usd, err)
		}
	}
	for _, tc := range []struct {
		day  string
		want float64
	}{{"2025-06-01", 0.75}, {"2025-06-02", 1.0}, {"2025-06-03", 0}} {
		got, err := s.SpendOn(ctx, tc.day)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("SpendOn(%s):\n\tgot  %v\n\twant %v", tc.day, got, tc.want)
		}
	}
	for _, bad := range []struct {
		day string
		usd float64
	}{{"2025-6-1", 1}, {"yesterday", 1}, {"2025-06-01", -1}, {"2025-06-01", math.NaN()}, {"2025-06-01", math.Inf(1)}} {
		if err := s.AddSpend(ctx, bad.day, bad.usd); !errors.Is(err, ErrInvalid) {
			t.Errorf("AddSpend(%q, %v):\n\tgot  %v\n\twant ErrInvalid", bad.day, bad.usd, err)
		}
	}
	if got, want := Day(time.Date(2025, 6, 1, 23, 30, 0, 0, time.FixedZone("w", -3600))), "2025-06-02"; got != want {
		t.Errorf("Day:\n\tgot  %s\n\twant %s", got, want)
	}
}

func TestDefaultPath(t *testing.T) {
	home, _ := os.UserHomeDir()
	tests := []struct {
		name, db, xdg, want string
	}{
		{"env var wins", "/tmp/x.db", "/state", "/tmp/x.db"},
		{"xdg state home", "", "/state", "/state/browser-agent/audit.db"},
		{"relative xdg ignored", "", "rel", filepath.Join(home, ".local/state/browser-agent/audit.db")},
		{"home fallback", "", "", filepath.Join(home, ".local/state/browser-agent/audit.db")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BROWSER_AGENT_DB", tc.db)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			if got := DefaultPath(); got != tc.want {
				t.Errorf("DefaultPath():\n\tgot  %s\n\twant %s", got, tc.want)
			}
		})
	}
}

// TestFieldNames checks that the Field* constants, the JSON keys and the table columns agree.
func TestFieldNames(t *testing.T) {
	s, _ := openTemp(t)
	columns := func(table string) []string {
		rows, err := s.db.Query("SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			if n != "seq" { // steps' internal row key
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	keys := func(v any) []string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	sorted := func(s []string) []string { s = append([]string(nil), s...); sort.Strings(s); return s }

	run := Run{FinishedAt: time.Now()}
	step := Step{URL: "http://h/p?secret=1", Duration: 1500 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"runs columns", columns("runs"), sorted(runColumns)},
		{"run JSON keys", keys(run), sorted(runColumns)},
		{"steps columns", columns("steps"), sorted(stepColumns)},
		{"step JSON keys", keys(step), sorted(stepColumns)},
		{"spend columns", columns("spend"), sorted([]string{FieldDay, FieldUSD})},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s:\n\tgot  %v\n\twant %v", tc.name, tc.got, tc.want)
		}
	}
	b, _ := json.Marshal(step)
	if bytes.Contains(b, []byte("secret")) || !bytes.Contains(b, []byte(`"duration_ms":1500`)) {
		t.Errorf("step JSON:\n\tgot  %s\n\twant sanitized with duration_ms 1500", b)
	}
}
