// Package bridge drives a dedicated, guarded Chromium through playwright-go: every request and
// redirect hop is decided by the policy, and pages are read in an isolated world.
//
// The browser never fetches a document or a subresource itself: the bridge routes every request,
// decides it with the policy, fetches it with Go without following redirects (Redirects walks
// each chain hop by hop) and fulfils it. It sits on policy, beside proxy and audit; the
// coordinator drives it through coordinator.Browser, and internal/guarded puts each Session behind
// the run's egress proxy. A page's text is read only where rendering proves it visible
// (visibility.go: every frame, scroll container and the page's whole length, by pixels); what
// cannot be proven is withheld, never judged by style checks, and Page.Withheld counts it. Every
// text node of the page is handed out or counted withheld with its reason (Page.Account, the
// conservation law of ARCHITECTURE.md); the proof checks after each group of shots that the runs
// are still where it measured them (a shot beyond the viewport may lay the page out again). The
// text handed out is the text the shots proved: a run whose text changed after its proof is
// withheld, and a change during the shots voids only the runs it may have drawn over. A
// pixel phase out of time leaves what it did not reach to the next Read, Links or Fields of the
// same page, which goes on from there (visState): a long page's text grows as it is proven.
//
// A page with a credential field (credential.go) is withheld whole. A read is handed over only
// when the page showed none before it and after it, "after" once the page is quiet again: its
// requests and the short timers their answers start, in every frame, are over (watch.go). The
// credential watch of init.js reports a field that came and went between two checks, and the
// reader never reads a field's value (an input's, or the text of an editable element).
//
// A Session is a façade over one type per job, each holding only what its job needs and
// documented in one line where it is declared:
//
//   - browserProc (launch.go, wall.go): the Chromium process, its fresh profile, how it is started
//     (behind the OS wall or not), and the /proc check that the browser behind the context is it.
//   - router (route.go, budget.go, state.go): every request and redirect hop decided by the policy,
//     fetched by the bridge (fetcher, on internal/fetch's client: the decided URL exactly, no
//     redirect followed) under the budgets (internal/budget: the policy's limits on bytes,
//     requests and fetches in flight), fulfilled; the navigation Open is making (navState) and
//     the request decisions (decisionLog).
//   - pageReader (reader.go): the page's frames over CDP, the reader (js/reader, one file per job;
//     its constants shared with Go come from internal/readerjs) in an isolated world per frame,
//     the credential checks around a read; the pixel proof (visibility.go: layout, shots, paint
//     toggling) and its arithmetic (internal/pixels: bands, drawn pixels, thresholds).
//   - watcher (watch.go): init.js's watch drained in every frame, and the quiet waits.
//   - activity (settle.go): the route's requests in flight, and the settle after load.
//   - lease (takeover.go): the sign-in lease, and the takeover's input and screenshot.
//   - pageCache (page.go): the page opened last, its text served chunk by chunk; life: its end.
//   - readAhead (ahead.go): the next part of a long page proven while the model thinks, served
//     only when the page made no change since.
//
// State shared between the page operations and the route handlers is under each type's own lock
// or atomic; page operations are serialized by the Session's op lock (lockOp, which waits for
// or cancels a read ahead).
//
// Key types: Runtime (one Playwright driver, NewRuntime), Session (one guarded Chromium,
// Runtime.Launch; Open, Read, Links, Fields), Page, Chunk, Link and Field (what a read returns),
// Hop and Redirects (the redirect walk), RequestDecision (every decision the bridge made), and
// the errors DeniedError, EgressError, BudgetError.
package bridge
