package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/browser-agent/browser-agent/policy"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/extension"
)

// staticFS holds the page's own files; its render.js is the side panel's, from package extension
// (staticFile).
//
//go:embed static
var staticFS embed.FS

// MaxRequestBody bounds the body of POST /api/runs.
const MaxRequestBody = 4 << 10

// ContentSecurityPolicy is sent with every response: scripts and styles come only from the
// server's own files, never inline; the page cannot be framed.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// heartbeat is how often an idle event stream sends a comment, so proxies keep it open.
const heartbeat = 15 * time.Second

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveStatic("index.html"))
	mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		s.serveStatic(r.PathValue("file"))(w, r)
	})
	mux.HandleFunc("GET /api/health", s.health)
	mux.HandleFunc("GET /api/presets", s.presets)
	mux.HandleFunc("POST /api/runs", s.createRun)
	mux.HandleFunc("OPTIONS /api/", s.preflight)
	mux.HandleFunc("GET /api/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/runs/{id}/events", s.events)
	mux.HandleFunc("GET /api/runs/{id}/frame", s.frame)
	mux.HandleFunc("GET /api/runs/{id}/takeover", s.takeoverStatus)
	mux.HandleFunc("POST /api/runs/{id}/takeover", s.takeoverStart)
	mux.HandleFunc("POST /api/runs/{id}/release", s.takeoverRelease)
	mux.HandleFunc("POST /api/runs/{id}/input", s.takeoverInput)
	mux.HandleFunc("GET /api/runs/{id}/takeover/frame", s.takeoverFrame)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		// A known endpoint asked with another method answers 405 with the methods it takes.
		if allow := allowedMethods(r.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed here; allowed: %s", policy.Clip(r.Method, 16), allow), nil)
			return
		}
		writeError(w, http.StatusNotFound, "no such API endpoint", nil)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			h.Set("Cache-Control", "no-store")
			h.Add("Vary", "Origin")
			if o := r.Header.Get("Origin"); o != "" && s.origins[o] {
				h.Set("Access-Control-Allow-Origin", o)
				h.Set("Access-Control-Expose-Headers", "Retry-After, Location")
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// serveStatic serves one embedded file. Names are single path elements; directories are not
// listed.
func (s *Server) serveStatic(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
			http.NotFound(w, r)
			return
		}
		data, err := staticFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	}
}

// staticFile is the embedded file the page names /static/NAME: render.js is the side panel's
// (one copy, in extension/), the others the page's own.
func staticFile(name string) ([]byte, error) {
	if name == "render.js" {
		return []byte(extension.RenderJS), nil
	}
	return fs.ReadFile(staticFS, path.Join("static", name))
}

// preflight answers CORS preflights from the allowed origins (the side panel).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o == "" || !s.origins[o] {
		writeError(w, http.StatusForbidden, originRefused(o), nil)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// allowedMethods is the Allow header of an API path routes serves, "" for an unknown one.
func allowedMethods(p string) string {
	switch seg := strings.Split(strings.TrimPrefix(p, "/api/"), "/"); {
	case p == "/api/health" || p == "/api/presets":
		return "GET, HEAD"
	case p == "/api/runs":
		return "POST, OPTIONS"
	case len(seg) == 2 && seg[0] == "runs" && seg[1] != "",
		len(seg) == 3 && seg[0] == "runs" && seg[1] != "" && (seg[2] == "events" || seg[2] == "frame"):
		return "GET, HEAD"
	case len(seg) == 3 && seg[0] == "runs" && seg[1] != "" && seg[2] == "takeover":
		return "GET, HEAD, POST"
	case len(seg) == 3 && seg[0] == "runs" && seg[1] != "" && (seg[2] == "release" || seg[2] == "input"):
		return "POST"
	case len(seg) == 4 && seg[0] == "runs" && seg[1] != "" && seg[2] == "takeover" && seg[3] == "frame":
		return "GET, HEAD"
	}
	return ""
}

// originRefused says a browser origin may not call the API, and how the server's operator lets it.
func originRefused(o string) string {
	if o == "" || o == "null" {
		return "origin not allowed"
	}
	return fmt.Sprintf("origin not allowed: start the server with --allow-origin %s to let it call the API", policy.Clip(o, 128))
}

// originAllowed is the check against cross-site requests that start runs: no Origin (a script, not
// a browser), the server's own origin, or an allowed one.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if s.origins[o] {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// HealthJSON is GET /api/health.
type HealthJSON struct {
	Status string `json:"status"` // "ok"
	// Live says whether a run started now would be live; when it is false, Why says why a recorded
	// run would play instead.
	Live    bool       `json:"live"`
	Why     string     `json:"why,omitempty"`
	Running int        `json:"running"`
	Queued  int        `json:"queued"`
	Limits  LimitsJSON `json:"limits"`
	// RunsLeft is how many live runs the asking visitor has left in the window, and
	// RunsBackSeconds when the next one comes back (0 when none is used).
	RunsLeft        int `json:"runs_left"`
	RunsBackSeconds int `json:"runs_back_seconds"`
	// LiveRun is the ID of the live run in progress, "" when none: anyone may watch it.
	LiveRun string `json:"live_run,omitempty"`
}

// LimitsJSON are the public-run limits as the page shows them.
type LimitsJSON struct {
	Concurrent     int     `json:"concurrent"`
	Queue          int     `json:"queue"`
	PerVisitor     int     `json:"per_visitor"`
	WindowSeconds  int     `json:"window_seconds"`
	DailySpendUSD  float64 `json:"daily_spend_usd"`
	RunDeadlineSec int     `json:"run_deadline_seconds"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	live, why := s.liveReadOnly(r)
	running, queued := s.adm.running(s.limits.Concurrent)
	l := s.limits
	left, back := s.runsLeft(s.visitor(r))
	backS := 0
	if back > 0 {
		backS = retrySeconds(back)
	}
	writeJSON(w, http.StatusOK, HealthJSON{
		Status: "ok", Live: live, Why: why, Running: running, Queued: queued,
		RunsLeft: left, RunsBackSeconds: backS, LiveRun: s.liveRunID(),
		Limits: LimitsJSON{
			Concurrent: l.Concurrent, Queue: l.Queue, PerVisitor: l.PerVisitor, WindowSeconds: int(l.Window.Seconds()),
			DailySpendUSD: l.DailySpendUSD, RunDeadlineSec: int(l.RunDeadline.Seconds()),
		},
	})
}

// liveReadOnly is liveAllowed without writing to the ledger.
func (s *Server) liveReadOnly(r *http.Request) (bool, string) {
	if s.recordedOnly {
		return false, WhyRecordedOnly
	}
	if s.ledger == nil {
		return false, WhyLedger
	}
	if s.unpaidCount() > 0 {
		return false, WhyLedger
	}
	spent, err := s.ledger.SpendOn(r.Context(), audit.Day(s.clock()))
	if err != nil {
		return false, WhyLedger
	}
	if spent >= s.limits.DailySpendUSD {
		return false, WhySpendCap
	}
	return true, ""
}

func (s *Server) presets(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.presetsJSON())
}

// RunRequest is the body of POST /api/runs: exactly one of Preset and Task.
type RunRequest struct {
	Preset string `json:"preset,omitempty"`
	Task   string `json:"task,omitempty"`
}

// CreatedJSON is the answer to POST /api/runs.
type CreatedJSON struct {
	RunInfo
	URL    string `json:"url"`    // GET it for the run
	Events string `json:"events"` // the run's event stream
	Frame  string `json:"frame"`  // the live view's latest frame
	// RunsLeft is how many live runs the visitor has left in the window.
	RunsLeft int `json:"runs_left"`
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		writeError(w, http.StatusForbidden, originRefused(r.Header.Get("Origin")), nil)
		return
	}
	// The body is small: a slow sender does not get to hold the connection.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Second))
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "send the request as application/json", nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxRequestBody), nil)
			return
		}
		writeError(w, http.StatusBadRequest, "could not read the request body", nil)
		return
	}
	var req RunRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		msg := `the body must be one JSON object: {"preset": NAME} or {"task": TEXT}`
		if f, ok := unknownField(err); ok {
			msg = fmt.Sprintf("unknown field %q: %s", policy.Clip(f, 64), msg)
		}
		writeError(w, http.StatusBadRequest, msg, nil)
		return
	}
	if (req.Preset == "") == (req.Task == "") {
		writeError(w, http.StatusBadRequest, `give exactly one of "preset" or "task"`, nil)
		return
	}
	var preset coordinator.Preset
	task := req.Task
	if req.Preset != "" {
		p, ok := s.preset(req.Preset)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown preset %q; presets: %s", policy.Clip(req.Preset, 64), strings.Join(s.presetNames(), ", ")), nil)
			return
		}
		preset, task = p, p.Task
	}
	// A task that would be rejected is rejected here, before any limit is counted or any run is
	// recorded.
	t, err := s.pol.ParseTask(task)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), map[string]any{"status": coordinator.StatusRejected})
		return
	}
	live, why := s.liveAllowed(r.Context())
	info := RunInfo{Task: t.Text, Preset: preset.Name, Title: preset.Title, Simulated: preset.Simulated, Model: s.modelName}
	rec, other, found := s.recordingFor(task, preset)
	adm, lerr := s.admit(admission{visitor: s.visitor(r), info: info, live: live, why: why, rec: rec, other: other, found: found})
	if lerr != nil {
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(lerr.retry)))
		code := http.StatusTooManyRequests
		if lerr.stopping {
			code = http.StatusServiceUnavailable
		}
		writeError(w, code, lerr.msg, map[string]any{
			"retry_after": retrySeconds(lerr.retry), "running": lerr.running, "queued": lerr.queued,
		})
		return
	}
	run := adm.run
	if adm.live {
		s.startLive(run, task, preset)
	} else {
		s.logf("web: run %s plays a recorded run: %s", run.id, run.snapshot().Recorded.Why)
		s.startPlayback(run, rec, found)
	}
	base := "/api/runs/" + run.id
	w.Header().Set("Location", base)
	writeJSON(w, http.StatusAccepted, CreatedJSON{
		RunInfo: run.snapshot().RunInfo, URL: base, Events: base + "/events", Frame: base + "/frame", RunsLeft: adm.left,
	})
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run := s.lookup(r.PathValue("id"))
	if run == nil {
		writeError(w, http.StatusNotFound, "no such run", nil)
		return
	}
	writeJSON(w, http.StatusOK, run.snapshot())
}

func (s *Server) frame(w http.ResponseWriter, r *http.Request) {
	run := s.lookup(r.PathValue("id"))
	if run == nil {
		writeError(w, http.StatusNotFound, "no such run", nil)
		return
	}
	png := run.latestFrame()
	if q := r.URL.Query().Get("seq"); q != "" {
		seq, err := strconv.Atoi(q)
		if err != nil || seq < 1 {
			writeError(w, http.StatusBadRequest, "seq must be a frame number, 1 or more", nil)
			return
		}
		if png = run.frameAt(seq); png == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no frame %d (a run keeps its last %d)", seq, keepFrames), nil)
			return
		}
		// A numbered frame never changes.
		w.Header().Set("Cache-Control", "private, max-age=3600, immutable")
	}
	if png == nil {
		writeError(w, http.StatusNotFound, "no frame", nil)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(len(png)))
	w.WriteHeader(http.StatusOK)
	w.Write(png)
}

// events streams a run's events as Server-Sent Events, from the start or after Last-Event-ID, until
// the run ends.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	run := s.lookup(r.PathValue("id"))
	if run == nil {
		writeError(w, http.StatusNotFound, "no such run", nil)
		return
	}
	visitor := s.visitor(r)
	done, ok := s.streams.take(visitor, s.limits.Streams, s.limits.VisitorStream)
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "too many open event streams", map[string]any{"retry_after": 5})
		return
	}
	defer done()

	n := 0
	if id, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil && id > 0 {
		n = id
	}
	if evs, _, done := run.next(n); done && len(evs) == 0 {
		// Everything was sent: 204 tells an EventSource to stop reconnecting.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	// When the server stops, the stream stays until its run's last event (the result, then end)
	// is out, or streamGrace passes.
	stopping := s.ctx.Done()
	var giveUp <-chan time.Time
	for {
		evs, changed, done := run.next(n)
		for _, ev := range evs {
			n++
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", n, ev.name, ev.data)
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if done && len(evs) == 0 {
			return
		}
		if done {
			continue
		}
		select {
		case <-changed:
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
		case <-r.Context().Done():
			return
		case <-stopping:
			stopping = nil
			t := time.NewTimer(streamGrace)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			return
		}
	}
}

// streamGrace bounds how long a stream waits, once the server stops, for its run's last event.
const streamGrace = 10 * time.Second

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// writeError writes {"error": msg, ...extra}.
func writeError(w http.ResponseWriter, status int, msg string, extra map[string]any) {
	body := map[string]any{"error": msg}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, status, body)
}

// unknownField is the name in encoding/json's error for a field DisallowUnknownFields refused.
func unknownField(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	const prefix = "json: unknown field "
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	name, err := strconv.Unquote(strings.TrimPrefix(msg, prefix))
	if err != nil {
		return "", false
	}
	return name, true
}
