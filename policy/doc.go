// Package policy decides, by exact scheme, host, port and route rules, which URLs the agent and its
// browser may read; everything else, and every write, is denied.
//
// It is the bottom layer: every other package asks it, and it imports none of them. The bridge
// asks it for every request and redirect hop in the browser, the egress proxy asks it again at
// the network layer, the coordinator asks it for every tool call before any browser work.
//
// Write detection reads each part of a URL by its position (writes.go): a route's literals, its
// variables by their Kind (an identifier, free text, the "*" rest; kinds.go), action parameters.
//
// Key types: Policy (Load and Parse read a policy; Decide, DecideURL, DecideRedirect and
// DecideSignIn give a Decision), Decision (Verdict, Rule, one fixed Reason phrase, canonical
// URL), URL (the WHATWG parse that every decision is made on, ParseURL), Limits (hop cap, steps,
// budgets), Task (a checked task) and Redactor (keyed redaction of what must not reach a log).
package policy
