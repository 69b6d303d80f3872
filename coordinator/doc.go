// Package coordinator runs one research task: it gives a model five read tools, checks every tool
// call with the policy before any browser work, and reports an answer only when the evidence it
// extracted in this run backs every claimed value.
//
// It sits above policy, browse and audit, and knows no browser: it drives any Browser, whose
// pages, chunks, links, fields and errors are package browse's (a bridge session behind the
// egress proxy in production, internal/testkit/browsertest in tests), and records through a Recorder
// (the audit store). runner, web, mcpserver and internal/cli run it.
//
// Key types: Coordinator (New; Run runs a task, StartSession serves tool calls one at a time for
// MCP), Model (the model behind the tools; coordinator/openai, coordinator/offline, Script for
// scripted runs), Browser and Launcher (the one launcher type: web, mcpserver and
// internal/cli take one), RunArgs and Result (Status, Answer, Evidence, Steps), Step (one tool
// call: the audit's step record plus Simulated; its JSON is the one view of a step), Evidence,
// and Preset (a ready-made task; front ends take presets as data).
//
// It knows no site: the shape of a task (the record identifier's pattern and example, the labels
// that name a record) is the policy's record key (policy.Record). Run owns the checks before any
// work: the task under the policy, then the model (RunArgs.NewModel, which the policy approves),
// and only then the browser (RunArgs.Launch). A source counts for the task's record only when the
// page is about it (see aboutRecord: the identifier in a field value, the title or the main
// heading, and no other record's identifier in its fields). The demo site's presets live with the
// demo (demo-site/presets).
package coordinator
