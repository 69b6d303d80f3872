// Package browse is the vocabulary a run and its browser share: what opening a page gives
// (Page, Chunk, Link, Field, and the Account of its text), and how a browser says no (the
// sentinel Errors, CredentialError, DeniedError, BudgetError, EgressError). The coordinator
// speaks it and knows no browser; the bridge (the guarded Chromium) returns it, and its own
// names for these (bridge.Page, bridge.ErrNoPage, ...) are the same types.
//
// It sits just above policy (a denial carries the policy's Decision) and below everything else.
package browse
