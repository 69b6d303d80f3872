package bridge

import "slices"

// LaunchArgs are the Chromium switches every session's browser gets on top of Playwright's
// defaults, for another launcher of the same browser (the MCP guard's, mcpguard).
func LaunchArgs() []string { return slices.Clone(launchArgs) }

// IsDescendant reports whether pid has ancestor among its parents (Linux /proc): the check that
// a browser reported over CDP is one this process launched.
func IsDescendant(pid, ancestor int) bool { return isDescendant(pid, ancestor) }
