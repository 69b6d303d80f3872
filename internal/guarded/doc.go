// Package guarded launches the browser a run drives: a dedicated Chromium, whose bridge decides
// every request, behind the run's own egress proxy, which decides it again at the network layer.
//
// It joins the two enforcing layers, bridge and proxy, under the coordinator: Browser is a
// coordinator.Browser. web, mcpserver and internal/cli launch through it.
//
// Key types: Browser (Launch, LaunchOn a shared bridge.Runtime, LaunchWith proxy options) and
// ErrBrowserExited.
package guarded
