// Package mcpserver serves the coordinator's five read tools, and its answer check, to any Model
// Context Protocol client. Every call goes through the coordinator exactly as a run's tool calls
// do: the same strict arguments, the same policy, the same guarded browser (bridge and egress
// proxy), the same evidence. Each MCP session gets its own browser, started on its first tool call
// and closed when the session ends or sits idle, and is recorded in the audit store as a run of
// kind "mcp".
//
// It sits near the top, beside web: it serves the coordinator's Session over MCP, launching each
// session's guarded browser through a coordinator.Launcher; internal/cli's mcp starts it.
//
// Key types: Server (New; stdio or Streamable HTTP), Config and HTTPOptions.
package mcpserver
