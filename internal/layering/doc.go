// Package layering holds the module's layering, bottom to top, and the test that keeps it: a
// package imports only packages of lower layers. It has no code; its test parses the import
// clauses of every package's non-test files (test files may reach up, e.g. to start the demo site)
// and fails on an import of a package's own layer or above, and on a package no layer names.
//
//	0  policy (decisions, the one decision record policy.Entry), internal/startup, internal/testkit/testutil,
//	   internal/wall (the OS network wall's launcher), internal/procs (the processes of /proc),
//	   internal/countio (a reader that counts, for the bridge's and the proxy's byte budgets),
//	   internal/testkit/pgtest (a PostgreSQL server for tests), extension (the side panel's render.js, which web serves too), internal/layering,
//	   bridge/internal/readerjs (the constants the bridge's page-side reader shares with Go),
//	   bridge/internal/pixels (the visibility proof's arithmetic: bands, drawn pixels)
//	1  browse (the vocabulary a run and its browser share: Page, Chunk, Link, Field, a browser's
//	   errors), on policy
//	2  bridge/internal/budget (a bridge session's request budget, which spends browse's BudgetError),
//	   bridge/internal/fetch (the bridge's HTTP client: the decided URL exactly, no redirect
//	   followed; the egress proxy's refusal as browse's EgressError)
//	3  bridge (the guarded Chromium, which returns browse's types), proxy (the egress proxy),
//	   audit (the store), each on policy; bridge/internal/genreader (writes the reader's
//	   constants file)
//	4  coordinator (the run: tools, checks, evidence; a Browser interface in browse's words: no
//	   bridge package among its dependencies), internal/testkit/browsertest, internal/testkit/testbrowser,
//	   internal/queue (the run queue on River, on the audit store's database),
//	   web/internal/demostate (the live demo's visit log and its tables, in the audit store's database)
//	5  coordinator/offline and coordinator/openai (models), internal/guarded (a bridge session
//	   behind its own egress proxy), runner (running a run: one task, warm browsers, the queue's
//	   jobs, recordings; used by serve, worker and record)
//	6  the servers, web (serve) and mcpserver, mcpguard (MCP), and, beside them at
//	   the edge, the demo: demo-site and demo-site/presets, which no server imports
//	7  internal/cli (every subcommand; it hands the demo's presets, recorded
//	   runs and policy to web)
//	8  the commands (cmd/...), bench, tests/..., examples/wiki; 9 examples/wiki/cmd/wiki
//
// ARCHITECTURE.md at the root walks a run through these packages.
package layering
