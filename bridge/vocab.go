package bridge

import "github.com/browser-agent/browser-agent/browse"

// The bridge returns package browse's vocabulary, the one the coordinator speaks without knowing
// the bridge; these are its names for it, the same types and values.
type (
	Page            = browse.Page
	Chunk           = browse.Chunk
	Link            = browse.Link
	Field           = browse.Field
	Hop             = browse.Hop
	Account         = browse.Account
	WithheldRun     = browse.WithheldRun
	Error           = browse.Error
	CredentialError = browse.CredentialError
	DeniedError     = browse.DeniedError
	BudgetError     = browse.BudgetError
	EgressError     = browse.EgressError
)

// Sentinel errors (browse.Err*).
const (
	ErrCredentialRequired = browse.ErrCredentialRequired
	ErrNoPage             = browse.ErrNoPage
	ErrHopLimit           = browse.ErrHopLimit
	ErrRedirectLoop       = browse.ErrRedirectLoop
	ErrClosed             = browse.ErrClosed
	ErrSessionExpired     = browse.ErrSessionExpired
	ErrUnsupportedContent = browse.ErrUnsupportedContent
	ErrNotLaunched        = browse.ErrNotLaunched
	ErrSetup              = browse.ErrSetup
	ErrPageChanged        = browse.ErrPageChanged
)

// IsDenied reports whether err is, or wraps, a policy denial, and returns it.
func IsDenied(err error) (*DeniedError, bool) { return browse.IsDenied(err) }

// IsBudget reports whether err is, or wraps, a spent budget, and returns it.
func IsBudget(err error) (*BudgetError, bool) { return browse.IsBudget(err) }
