// Package browsertest provides fake browsers for tests of the coordinator and the command line:
// HTTP reads a live site over plain HTTP the way the bridge reads it with Chromium (every URL and
// redirect hop decided by the policy, credential pages withheld), and Pages serves canned pages.
// Neither runs script; they are test doubles, not a browser.
//
// It is test scaffolding above the bridge: HTTP decides every redirect hop with the bridge's own
// bridge.Redirects, so the double and the bridge cannot disagree on which URLs may be fetched.
//
// Layering, bottom to top: policy; bridge, proxy and audit, each on policy; coordinator on
// those (through its Browser interface); internal/guarded, which puts a bridge session behind a
// proxy; web and internal/mcpserver; internal/cli and the two commands on top.
//
// Key types: HTTP (NewHTTP) and Pages (NewPages, keyed by Page).
package browsertest
