// Package runner runs a run: one task through the coordinator with a guarded browser (Execute,
// RunSpec, and the Moments a live view follows), browsers started before they are needed (Pool,
// WarmLauncher), the run queue's jobs without a live view (JobRunner), and real runs captured as
// recordings (Capture, Recording) and their results as the API shows them (ResultJSON).
//
// It sits below its three front ends, which share it: "browser-agent serve" (package web, with
// its live view, sign-in handoff and public-run limits), "browser-agent worker" (JobRunner over
// internal/queue) and "browser-agent record" (Capture). It knows no site: presets and the
// model come from its callers.
package runner
