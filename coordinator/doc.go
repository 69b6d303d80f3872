// Package coordinator runs one research task: it gives a model five read tools, checks every tool
// call with the policy before any browser work, and reports an answer only when the evidence it
// extracted in this run backs every claimed value.
//
// It sits above policy, bridge and audit: it drives any Browser (a bridge session behind the
// egress proxy in production, coordinator/browsertest in tests) and records through a Recorder
// (the audit store). web, internal/mcpserver and internal/cli run it.
//
// Layering, bottom to top: policy; bridge, proxy and audit, each on policy; coordinator on
// those (through its Browser interface); internal/guarded, which puts a bridge session behind a
// proxy; web and internal/mcpserver; internal/cli and the two commands on top.
//
// Key types: Coordinator (New; Run runs a task, StartSession serves tool calls one at a time for
// MCP), Model (the model behind the tools; coordinator/openai, Script for scripted runs), Browser
// and Launcher, RunArgs and Result (Status, Answer, Evidence, Steps), Evidence, and the Preset
// table.
package coordinator
