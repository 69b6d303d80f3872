package tests

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// encodings are the forms a secret is searched in: as is, URL-encoded (query and form), base64
// (standard and URL alphabets, at the three byte offsets, so that a secret inside a longer
// encoded value is found too) and hex.
func encodings(secret string) []string {
	out := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), hex.EncodeToString([]byte(secret))}
	for off := range 3 {
		b := append(bytes.Repeat([]byte{0}, off), secret...)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			s := strings.TrimRight(enc.EncodeToString(b), "=")
			// Drop the characters that depend on the neighbouring bytes.
			head := (off*8 + 5) / 6
			if len(s) > head+2 {
				out = append(out, s[head:len(s)-2])
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestServeSignInHandoff drives the real binary's serve, with the demo site's own policy (its
// signin key), over http and over https (the site behind its own authority, intercepted by the
// egress proxy): the visitor starts the sign-in preset, takes over, types the demo credential
// through the input endpoint, submits under the lease and hands back; the agent continues in the
// same browser and the run ends answered with the restricted record. Then the typed password and
// the session cookie are searched for, as bytes and in their encoded forms, in every place they
// could leak: the audit database and its -wal and -shm files (during the run and after), serve's
// stdout and stderr (its log), the event stream as it ran and its replay, the run's JSON, and the
// recording a later run plays.
func TestServeSignInHandoff(t *testing.T) {
	for _, https := range []bool{false, true} {
		name := "http"
		if https {
			name = "https"
		}
		t.Run(name, func(t *testing.T) { serveSignIn(t, https) })
	}
}

func serveSignIn(t *testing.T, https bool) {
	dir := t.TempDir()
	site := demosite.New(demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	var env []string
	var origin string
	if https {
		srv, ca := testutil.NewTLSServer(site.Handler())
		t.Cleanup(srv.Close)
		roots := filepath.Join(dir, "roots.pem")
		if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "BROWSER_AGENT_UPSTREAM_ROOTS="+roots)
		origin = srv.URL
	} else {
		srv := httptest.NewServer(site.Handler())
		t.Cleanup(srv.Close)
		origin = srv.URL
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, demosite.PolicyYAML(origin), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "audit.db")
	// One live run per hour: the second run plays the recording of the preset.
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--policy", pol, "--db", db, "--runs-per-hour", "1")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr testutil.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		if !testutil.WaitOrKill(cmd, 30*time.Second) {
			t.Errorf("serve did not stop on SIGTERM")
		}
	}
	t.Cleanup(stop)

	listening := regexp.MustCompile(`serving the live demo on (http://127\.0\.0\.1:\d+)`)
	var base string
	if !testutil.Eventually(60*time.Second, func() bool {
		if m := listening.FindSubmatch(stderr.Bytes()); m != nil {
			base = string(m[1])
			return true
		}
		return false
	}) {
		t.Fatalf("serve did not listen:\n%s", stderr.Bytes())
	}

	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	var created struct {
		ID     string `json:"id"`
		Events string `json:"events"`
	}
	code, b := call("POST", "/api/runs", `{"preset":"sign-in"}`)
	if json.Unmarshal(b, &created); code != http.StatusAccepted || created.ID == "" {
		t.Fatalf("POST /api/runs: %d %s", code, b)
	}
	runPath := "/api/runs/" + created.ID
	// The live event stream, read as it comes.
	var live testutil.Buffer
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		res, err := http.Get(base + created.Events)
		if err != nil {
			return
		}
		defer res.Body.Close()
		io.Copy(&live, res.Body)
	}()

	state := func() string {
		_, b := call("GET", runPath, "")
		var rj struct {
			State string `json:"state"`
		}
		json.Unmarshal(b, &rj)
		return rj.State
	}
	if !testutil.Eventually(120*time.Second, func() bool { return state() == "waiting_for_human" }) {
		t.Fatalf("the run never waited for a person; stderr:\n%s", stderr.Bytes())
	}
	// Before the lease the sign-in POST is a write like any other: no input is taken.
	if code, b := call("POST", runPath+"/input", `{"kind":"key","key":"Enter"}`); code != http.StatusConflict {
		t.Errorf("input before the takeover: %d %s, want 409", code, b)
	}
	if code, b := call("POST", runPath+"/takeover", `{}`); code != http.StatusOK {
		t.Fatalf("takeover: %d %s", code, b)
	}
	if code, b := call("GET", runPath+"/takeover/frame", ""); code != http.StatusOK || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("holder's frame: %d", code)
	}
	// Tab past the four links of the site's navigation to the username field, as the live view
	// sends keys.
	inputs := []string{
		`{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`, `{"kind":"key","key":"Tab"}`,
		`{"kind":"key","key":"Tab"}`, `{"kind":"text","text":"` + demosite.DemoUser + `"}`,
		`{"kind":"key","key":"Tab"}`, `{"kind":"text","text":"` + demosite.DemoPassword + `"}`, `{"kind":"key","key":"Enter"}`,
	}
	for _, in := range inputs {
		if code, b := call("POST", runPath+"/input", in); code != http.StatusNoContent {
			t.Fatalf("input %s: %d %s", in, code, b)
		}
	}
	// The lease-gated POST went through both layers: the site issued a session.
	if !testutil.Eventually(30*time.Second, func() bool { return len(site.SessionIDs()) > 0 }) {
		t.Fatalf("the sign-in POST never reached the site under the lease; stderr:\n%s", stderr.Bytes())
	}
	// The audit files as they are while the run is still going on.
	during := map[string][]byte{}
	readDB := func(into map[string][]byte, when string) {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if b, err := os.ReadFile(db + suffix); err == nil {
				into["audit.db"+suffix+" "+when] = b
			}
		}
	}
	readDB(during, "during the lease")
	if code, b := call("POST", runPath+"/release", `{}`); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, b)
	}
	select {
	case <-streamDone:
	case <-time.After(120 * time.Second):
		t.Fatalf("the run did not end; stderr:\n%s", stderr.Bytes())
	}
	var result struct {
		Status   string            `json:"status"`
		Reason   string            `json:"reason"`
		RecordID string            `json:"record_id"`
		Fields   []json.RawMessage `json:"fields"`
		Steps    []json.RawMessage `json:"steps"`
	}
	sc := bufio.NewScanner(bytes.NewReader(live.Bytes()))
	sc.Buffer(nil, 16<<20)
	event := ""
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "result" {
			json.Unmarshal([]byte(v), &result)
		}
	}
	if result.Status != "answered" || result.RecordID != demosite.RestrictedID || len(result.Fields) < 3 {
		var steps strings.Builder
		for _, s := range result.Steps {
			steps.Write(s)
			steps.WriteString("\n")
		}
		t.Fatalf("the sign-in run: %s (%s), record %q with %d fields; want answered with %s\nsteps:\n%s\nstderr:\n%s",
			result.Status, result.Reason, result.RecordID, len(result.Fields), demosite.RestrictedID, steps.String(), stderr.Bytes())
	}
	if !strings.Contains(string(live.Bytes()), "a person acted on the page") {
		t.Errorf("no step says a person acted on the page")
	}
	readDB(during, "after the run")

	_, replay := call("GET", created.Events, "")
	_, runJSON := call("GET", runPath, "")
	// A second run of the preset plays a recording (one live run per hour).
	code, b = call("POST", "/api/runs", `{"preset":"sign-in"}`)
	var played struct {
		Events   string          `json:"events"`
		Recorded json.RawMessage `json:"recorded"`
	}
	if json.Unmarshal(b, &played); code != http.StatusAccepted || len(played.Recorded) == 0 || string(played.Recorded) == "null" {
		t.Fatalf("second run: %d %s, want a recorded run", code, b)
	}
	_, recording := call("GET", played.Events, "")
	stop()
	readDB(during, "after serve stopped")

	places := map[string][]byte{
		"serve's stdout": stdout.Bytes(), "serve's stderr (its log)": stderr.Bytes(),
		"the live event stream": live.Bytes(), "the event stream's replay": replay,
		"the run's JSON": runJSON, "the played recording": recording,
	}
	for k, v := range during {
		places[k] = v
	}
	if len(during) < 4 {
		t.Errorf("read %d audit files, want at least the database and its WAL", len(during))
	}
	secrets := map[string]string{"the typed password": demosite.DemoPassword}
	for i, sid := range site.SessionIDs() {
		secrets[fmt.Sprintf("session cookie %d", i)] = sid
	}
	for what, secret := range secrets {
		for _, form := range encodings(secret) {
			for where, data := range places {
				if bytes.Contains(data, []byte(form)) {
					t.Errorf("%s (as %q) is in %s", what, form, where)
				}
			}
		}
	}
	// The searches can find: the restricted record's values are in the answer, and the session
	// cookie's name in nothing but what the site sent.
	if !bytes.Contains(replay, []byte(demosite.RestrictedID)) {
		t.Errorf("the replay does not hold the record's ID: the search looks at the wrong bytes")
	}
}
