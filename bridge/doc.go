// Package bridge drives a dedicated, guarded Chromium through playwright-go: every request and
// redirect hop is decided by the policy, and pages are read in an isolated world.
//
// The browser never fetches a document or a subresource itself: the bridge routes every request,
// decides it with the policy, fetches it with Go without following redirects (Redirects walks
// each chain hop by hop) and fulfils it. It sits on policy, beside proxy and audit; the
// coordinator drives it through coordinator.Browser, and internal/guarded puts each Session behind
// the run's egress proxy. A page's text is read only where rendering proves it visible
// (visibility.go: every frame, scroll container and the page's whole length, by pixels); what
// cannot be proven is withheld, never judged by style checks, and Page.Withheld counts it. A
// pixel phase out of time leaves what it did not reach to the next Read, Links or Fields of the
// same page, which goes on from there (visState): a long page's text grows as it is proven.
//
// A page with a credential field (credential.go) is withheld whole. A read is handed over only
// when the page showed none before it and after it, "after" once the page is quiet again: its
// requests and the short timers their answers start, in every frame, are over (watch.go). The
// credential watch of init.js reports a field that came and went between two checks, and the
// reader never reads a field's value (an input's, or the text of an editable element).
//
// A Session's state shared between its page operations and its route handlers is one small type
// per job, each under its own lock (state.go): navState (the one navigation Open is making, the
// sub-frame count), pageCache (the page opened last) and decisionLog (the request decisions).
// Page operations are serialized by the Session's op lock; closing is closeOnce and done.
//
// Key types: Runtime (one Playwright driver, NewRuntime), Session (one guarded Chromium,
// Runtime.Launch; Open, Read, Links, Fields), Page, Chunk, Link and Field (what a read returns),
// Hop and Redirects (the redirect walk), RequestDecision (every decision the bridge made), and
// the errors DeniedError, EgressError, BudgetError.
package bridge
