package policy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// GuardMode is the policy's "guard.mode" key: what `browser-agent guard` lets the agent do.
type GuardMode string

// The guard's modes.
const (
	// GuardRead refuses every write: the default.
	GuardRead GuardMode = "read"
	// GuardWrite holds a write the policy refuses only as a write for a person to approve
	// (docs/guard-write-mode.md).
	GuardWrite GuardMode = "write"
)

// Defaults and bounds of the guard key.
const (
	DefaultApprovalListen  = "127.0.0.1:0"
	DefaultApprovalTimeout = 2 * time.Minute
	minApprovalTimeout     = 10 * time.Second
	maxApprovalTimeout     = 30 * time.Minute
)

// Guard is the policy's "guard" key, with its defaults filled in.
type Guard struct {
	Mode GuardMode
	// ApprovalListen is the approval page's address: always a loopback host and a port (0: any).
	ApprovalListen string
	// ApprovalTimeout is how long a held write waits for a person; no answer is a refusal.
	ApprovalTimeout time.Duration
	// PaymentOrigins are the file's payment origins (canonical scheme://host[:port]), added by
	// the guard to its built-in list.
	PaymentOrigins []string
}

// fileGuard is the guard key as written.
type fileGuard struct {
	Mode     str `yaml:"mode"`
	Approval struct {
		Listen  str `yaml:"listen"`
		Timeout str `yaml:"timeout"`
	} `yaml:"approval"`
	PaymentOrigins []str `yaml:"payment_origins"`
}

// defaultGuard is the guard of a file without the key: read-only.
func defaultGuard() Guard {
	return Guard{Mode: GuardRead, ApprovalListen: DefaultApprovalListen, ApprovalTimeout: DefaultApprovalTimeout}
}

// compileGuard validates the guard key. The approval page takes a person's yes for a write, so
// it listens on loopback only: an address other machines reach is refused, whatever the port.
func compileGuard(f *fileGuard, fail func(int, string, string, ...any) error) (Guard, error) {
	g := defaultGuard()
	if f.Mode.Line > 0 {
		switch m := GuardMode(f.Mode.V); m {
		case GuardRead, GuardWrite:
			g.Mode = m
		default:
			return g, fail(f.Mode.Line, "guard.mode", "%q is not one of read, write", f.Mode.V)
		}
	}
	if l := f.Approval.Listen; l.Line > 0 {
		if err := checkLoopback(l.V); err != nil {
			return g, fail(l.Line, "guard.approval.listen", "%v", err)
		}
		g.ApprovalListen = l.V
	}
	if tm := f.Approval.Timeout; tm.Line > 0 {
		d, err := time.ParseDuration(tm.V)
		if err != nil {
			return g, fail(tm.Line, "guard.approval.timeout", "%q is not a duration (e.g. 2m, 90s)", tm.V)
		}
		if d < minApprovalTimeout || d > maxApprovalTimeout {
			return g, fail(tm.Line, "guard.approval.timeout", "%s is out of range %s..%s", tm.V, minApprovalTimeout, maxApprovalTimeout)
		}
		g.ApprovalTimeout = d
	}
	seen := map[string]int{}
	for i, o := range f.PaymentOrigins {
		key := fmt.Sprintf("guard.payment_origins[%d]", i)
		if !strings.Contains(o.V, "://") {
			return g, fail(o.Line, key, "%q is not an origin: write scheme://host[:port], e.g. https://pay.example", o.V)
		}
		s, err := compileOrigin(o.V)
		if err != nil {
			return g, fail(o.Line, key, "%v", err)
		}
		if j, dup := seen[s.origin]; dup {
			return g, fail(o.Line, key, "origin %s is repeated from payment_origins[%d]", s.origin, j)
		}
		seen[s.origin] = i
		g.PaymentOrigins = append(g.PaymentOrigins, s.origin)
	}
	return g, nil
}

// checkLoopback accepts host:port where host is localhost or a loopback IP address.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:0)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number 0..65535", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return fmt.Errorf("%q is not a loopback address: the approval page takes a person's yes for a write, so only this machine may reach it (use 127.0.0.1 or [::1])", addr)
	}
	return nil
}

// Guard is the policy's "guard" key: read-only with the defaults when the file does not say.
func (p *Policy) Guard() Guard {
	g := p.guard
	if g.Mode == "" {
		g = defaultGuard()
	}
	g.PaymentOrigins = append([]string(nil), g.PaymentOrigins...)
	return g
}
