// Package mcpserver serves the coordinator's five read tools, and its answer check, to any Model
// Context Protocol client. Every call goes through the coordinator exactly as a run's tool calls
// do: the same strict arguments, the same policy, the same guarded browser (bridge and egress
// proxy), the same evidence. Each MCP session gets its own browser session, started on its first
// tool call and recorded in the audit store as a run of kind "mcp". A browser session ends when
// the MCP session ends or sits idle, when its step or time budget is spent, when its processes pass
// the memory bound, or when the client calls new_session; the next call starts a new one, with
// fresh budgets and no earlier evidence, and its result says so (NoteKey).
//
// It sits near the top, beside web: it serves the coordinator's Session over MCP, launching each
// session's guarded browser through a coordinator.Launcher; internal/cli's mcp starts it.
//
// Key types: Server (New; stdio or Streamable HTTP), Config and HTTPOptions.
package mcpserver
