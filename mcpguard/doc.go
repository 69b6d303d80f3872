// Package mcpguard puts another browser MCP server (Playwright MCP, npm @playwright/mcp) behind
// this project's wall: it starts that server as its client, behind the run's egress proxy, and
// offers an allow-list of its tools to an MCP client, deciding every call.
//
// What the guard decides:
//
//   - The network: the guard launches the browser itself, as the agent's bridge does: the
//     bridge's Chromium and flags, behind an egress proxy of its own (proxy.Start) for the policy,
//     in a network namespace whose only interface is loopback (internal/wall), so no request the
//     policy refuses leaves, whatever is clicked or whatever the browser is told: only GET and
//     HEAD of routes the policy lists, every redirect hop decided again, no DNS, UDP or direct TCP.
//     The upstream attaches to it over CDP (Playwright MCP's cdpEndpoint, in the config file the
//     guard writes, PLAYWRIGHT_MCP_CONFIG) and makes its own context there with the proxy's
//     credential. Chromium's DevTools port is on the namespace's own loopback, which nothing
//     outside reaches; the wall's launcher relays one unix socket in the guard's 0700 directory to
//     it, and the guard checks over its own CDP session that the browser behind it is the process
//     it launched (a descendant, on its fresh profile, behind the wall). The policy's wall key
//     (else Config.Wall, else auto) decides as for the agent: required where no namespace can be
//     made refuses to start; off, or auto without namespaces, lets the upstream launch its
//     Chromium behind the proxy alone (Wall says which). Command-line flags and PLAYWRIGHT_MCP_*
//     variables that would attach the upstream to another browser or take it out from behind the
//     proxy (another config, proxy, CDP endpoint, remote endpoint, extension, ignored certificate
//     errors, init scripts) are refused or dropped.
//   - Tools: only DefaultTools (navigate, back, snapshot, click, type, press key, select, hover,
//     wait, tabs, screenshot, close) are listed; script, code, file, network, storage and dialog
//     tools are not. A navigation's URL is decided by the policy before it is sent. An argument
//     that writes a file (filename) is refused.
//   - Targets: a call that changes the page names a ref (never a selector) from the snapshot the
//     client was shown last, and the guard takes a snapshot of its own just before the call: the
//     ref must be on the page now with the same role and name, or the call is refused.
//   - Typing: into a field this project's credential detection (bridge.CredentialField) calls a
//     sign-in, verification or card field is refused; so is typing that would submit (submit, a
//     line break) and any key but a movement key.
//   - Dialogs: an alert is accepted; any other dialog (confirm, prompt, beforeunload) is
//     dismissed by the guard, and a file chooser cancelled.
//   - Results: after every call the guard reads the page's editable fields (never their values);
//     when one holding a value is a credential field, the whole result is withheld. In its own
//     browser it reads every frame of every page over its own CDP session, in an isolated world
//     of its own (browser.filledFields), so a page that changes its own world's objects (a value
//     getter, querySelectorAll) cannot hide a filled field from it; with the wall off it reads
//     through the upstream's evaluate, in the page's world. Everything
//     the upstream returns is passed as untrusted page data, under "untrusted_page_data".
//   - Visible text (visible.go): a result's snapshot is shown only where rendering proves a
//     person sees it. In its own browser the guard runs the bridge's visibility proof
//     (bridge.VisibleText: the page frozen, every frame and scroller laid out and shot) on the one
//     tab the result names, over its own DevTools session, and replaces each snapshot name or text
//     the proven text does not hold by HiddenMark, keeping roles, states and refs. With the wall
//     off, or when the proof fails, no snapshot text is shown. Result sections that carry the
//     page's text beyond its address, title and dialogs (the code the upstream ran, its events and
//     console, a page's tools) are dropped.
//   - Write mode (hold.go; the policy's guard key, mode: write; read-only is the default): a POST the policy refuses
//     only as a write is held by the egress proxy (proxy.WithHold) and shown on the approval page
//     (loopback, a per-run token); a person's answer names the request's digest, and an approval
//     sends exactly the held bytes once. A write carrying a credential field or a card number is
//     refused without being offered.
//   - Takeover (takeover.go, when the guard owns the browser): a person takes the wheel on a
//     loopback page with a per-run token (printed on stderr), sees the tab and gives it input
//     events over the guard's own DevTools session, then hands back. Meanwhile every tool call is
//     refused and the proxy's sign-in lease lets a POST through to the policy's sign-in routes
//     only; afterwards the refs shown before are void and the next result says a person changed
//     the page. What the person types goes to the browser only.
//   - Audit: one run of kind "guard" in the audit store; one step per call with its decision,
//     and the egress proxy's decisions beneath it (tool "request").
//
// What it does not decide: what the upstream's own process does besides its browser (Playwright
// MCP writes its output folder; it runs outside the namespace), a process of the same user that
// connects to the DevTools socket, and, before typing, whether the field a ref names is a
// credential field is read through the upstream's evaluate in the page's world (a page that lies
// there is still caught once the field holds a value: the result is withheld).
//
// It sits beside mcpserver, on proxy, internal/wall, bridge (credential detection, launch
// flags), policy and audit;
// internal/cli's guard starts it.
//
// Key types: Guard (Start; Run on stdio, Server for Streamable HTTP), Config.
package mcpguard
