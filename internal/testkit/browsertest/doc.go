// Package browsertest provides fake browsers for tests of the coordinator and the command line:
// HTTP reads a live site over plain HTTP the way the bridge reads it with Chromium (every URL and
// redirect hop decided by the policy, credential pages withheld), and Pages serves canned pages.
// Neither runs script; they are test doubles, not a browser.
//
// It is test scaffolding above the bridge: HTTP decides every redirect hop with the bridge's own
// bridge.Redirects, so the double and the bridge cannot disagree on which URLs may be fetched.
//
// Key types: HTTP (NewHTTP) and Pages (NewPages, keyed by Page).
package browsertest
