// Package web serves the live demo: one page with the presets it is given, a task box, a live view of the
// agent's browser, the steps as they happen and the result; a JSON API with a Server-Sent Events
// stream for the page, the Chrome side panel and scripts; and the public-run limits (one run at a
// time, runs per visitor per hour, a daily model-spend cap after which a recorded real run plays,
// failing closed when the spend ledger cannot be read).
//
// It sits near the top, beside mcpserver: it runs the coordinator with a guarded browser
// per run (a coordinator.Launcher) and records to the audit store; internal/cli's serve starts it
// and hands it the demo as data (WithPresets, WithFieldOrder, WithRecordings: demo-site/presets), so web knows no
// site (internal/layering holds it to that). The page's render.js (the renderer and what the page
// and the side panel share: starting a run, following its events) is the side panel's own file,
// extension/render.js, embedded by package extension and served as /static/render.js.
//
// A serve run that reaches a sign-in page on a site whose policy names sign-in routes waits for
// the visitor who started it (takeover.go): a lease (WithLease: idle expiry, hard maximum) during
// which the model's tools are paused and that visitor alone sends input to the page and sees it.
//
// The Server's state is one type per job, each under its own lock: admissions (admission.go: the
// live runs, the queue and each visitor's runs in the window; admit decides under it), registry
// (registry.go: the runs the API names), streamGate (open event streams), spendBook (ledger.go:
// spend not yet written to the ledger) and recentRuns (playback.go: the latest live run of each
// preset). admit names the run it admits under the admissions lock; no other is nested.
//
// Key types: Server (New; the page, the API and the SSE stream), Limits (the public-run limits).
// Running a run is not web's: package runner runs one (Execute), keeps browsers warm (Pool),
// runs the queue's jobs (JobRunner) and captures recordings, for serve, worker and record alike.
package web
