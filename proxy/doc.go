// Package proxy is the run's egress proxy: it applies the browser policy again, at the network
// layer, to every request the run's Chromium sends, so that what the browser-layer guards miss
// (worker WebSockets, later redirect hops, beacons, downloads, prefetches, Chromium's own
// background requests) cannot leave.
//
// One Proxy serves one run on 127.0.0.1 with a random per-run credential. It forwards plain HTTP
// GET and HEAD requests whose full URL the policy allows, and intercepts CONNECT tunnels to https
// origins the policy names, so that each https request inside is decided the same way. Everything else is denied with 403 and an X-Browser-Agent-Error header
// naming the reason. Every name is resolved once, every address is classified, and the proxy dials
// exactly the address it checked. When the proxy is down, a browser configured with ChromiumArgs
// reaches nothing: it fails closed.
//
// What the proxy decides:
//
//   - Credential: every request must carry the run's Basic credential (Credentials); otherwise the
//     answer is 407 with a Basic challenge, which Playwright answers for Chromium. A 407 is counted
//     (Stats.AuthChallenges) and never forwarded, but it is not a Decision.
//   - Plain HTTP: only GET and HEAD, without a body or an Upgrade, of an http URL the policy allows
//     (policy.DecideURL on the full canonical URL, with the method). The request is sent to the
//     checked address with exactly the canonical path and query that were decided, hop-by-hop
//     headers and Proxy-Authorization removed, and its response, redirects included, is passed
//     back as it is: the proxy never follows a redirect.
//   - CONNECT: only to host:port of an https site of the policy, and then intercepted: the proxy
//     answers the client's TLS with a leaf certificate for that host, minted by the run's own
//     authority (made in memory by New, never written anywhere; see CACert, SPKIHash), offers
//     only HTTP/1.1, and decides every request inside the tunnel exactly as a plain-HTTP one
//     (method, body, Upgrade, path and query, route), with scheme https. An allowed request is
//     sent over the proxy's own TLS connection to the checked address, verified against the
//     system roots and the WithUpstreamRoots certificates, never without verification; a
//     certificate that does not verify fails the request (502, ReasonUpstreamCert). A request
//     inside a tunnel for another origin, or with another Host, is denied. Chromium also tunnels
//     ws:// through CONNECT, so a CONNECT to an http origin is denied: that is how WebSockets to
//     http sites are stopped; a wss:// upgrade inside a tunnel is denied as an upgrade.
//   - Addresses: a name is resolved once per request, every address it resolves to is classified
//     (Classify), and the request is denied if any is not public; the proxy then dials that very
//     address (never the name), so DNS rebinding cannot change it afterwards. A non-public address
//     is dialed only when the policy names it as a literal origin (http://127.0.0.1:8081 allows
//     127.0.0.1:8081, and nothing else on loopback), or, for a name the policy names, under
//     WithAllowPrivateNames(true), which is off by default. Unspecified, multicast and broadcast
//     addresses are never dialed.
//
// Every request gets one canonical Decision, and so does every tunnel (its CONNECT): counted in Stats, logged as a CanonicalDecision line
// and handed to the WithDecisionHook function. Denials are 403 responses whose X-Browser-Agent-Error
// header and short text body name the reason; neither ever echoes a query string.
//
// It sits on policy, beside bridge and audit; internal/guarded starts one Proxy per run and puts
// the run's bridge session behind it.
//
// Files by job: proxy.go (Proxy, New, Start, Close, ServeHTTP, the refusal and record helpers),
// auth.go (the run's credential), forward.go (deciding and forwarding one request, plain HTTP or
// read inside a tunnel, and copying its response), connect.go (CONNECT), mitm.go (the run's
// authority, the interception, serveTunneled), dial.go (resolve, classify, dial the checked address), tunnels.go (open or
// closed, requests in flight and tunnels under one lock; the upstream slots), budget.go,
// decision.go, addr.go, options.go, client.go.
//
// Key types: Proxy (New, Start; Server, Credentials, ChromiumArgs, CACert, Stats), Decision (one
// per request or tunnel), Stats, and the options WithDecisionHook, WithUpstreamRoots,
// WithAllowPrivateNames.
package proxy
