package bridge

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/browser-agent/browser-agent/internal/wall"
	"github.com/browser-agent/browser-agent/policy"
)

// WithWall sets when a session's Chromium runs behind the operating system's wall (internal/wall:
// a network namespace of its own whose only way out is its proxy) for policies that do not say
// (their "wall" key). Default policy.WallAuto: walled wherever the machine can make a namespace.
func WithWall(m policy.WallMode) Option { return func(c *config) { c.wall = m } }

// FixWall is the fix of a policy that requires the wall on a machine that cannot make one.
const FixWall = "run as root, or allow unprivileged user namespaces (sysctl user.max_user_namespaces=1000, and on Debian kernel.unprivileged_userns_clone=1), or set wall: auto in the policy"

// wallMode is the session's wall mode: the policy's, else the launch's default.
func (c *config) wallMode(pol *policy.Policy) policy.WallMode {
	if m := pol.Wall(); m != "" {
		return m
	}
	if c.wall != "" {
		return c.wall
	}
	return policy.WallAuto
}

// planWall decides whether the launch is walled and sets p.wall to the audit's line about it. It
// returns the executable Playwright starts and the arguments to add: cfg.chromium and none when
// the browser is not walled, the launcher and its argument when it is. proxyServer is the
// browser's proxy (the egress proxy, or the refusing one): the forwarder listens on the same
// address inside the namespace, so it must be on IPv4 loopback. When the wall cannot be had (no
// namespaces here, or a proxy elsewhere) auto goes on without it and says why; a policy that
// requires it is refused with a SetupError.
func (p *browserProc) planWall(proxyServer string) (exe string, args []string, err error) {
	mode := p.cfg.wallMode(p.pol)
	if mode == policy.WallOff {
		p.wall = "off: the policy turns it off (wall: off)"
		if p.pol.Wall() == "" {
			p.wall = "off: turned off for this launch"
		}
		return p.cfg.chromium, nil, nil
	}
	probe := p.cfg.wallProbe
	if probe == nil {
		probe = wall.Probe
	}
	a := probe()
	why := a.Err
	var arg string
	if why == nil {
		host := proxyServer
		if u, err := url.Parse(proxyServer); err == nil && u.Host != "" {
			host = u.Host
		}
		exe, arg, why = wall.Command(a.Kind, p.cfg.chromium, host)
	}
	if why != nil {
		if mode == policy.WallRequired {
			return "", nil, &SetupError{What: "the wall (a network namespace for Chromium)",
				Problem: "is required by the policy (wall: required) but cannot be made here", Err: why, Fix: FixWall}
		}
		p.wall = "off: " + why.Error()
		return p.cfg.chromium, nil, nil
	}
	p.wall, p.walled = a.Status(), true
	return exe, []string{arg}, nil
}

// Wall is the session's line for the audit about the operating system's wall: "on: ..." (how the
// namespace was made) or "off: ..." (why not).
func (s *Session) Wall() string { return s.proc.wall }

// verifyWall checks that a walled browser pid is in a network namespace other than this
// process's, whose only interface is lo: the wall is up, not only asked for.
func (p *browserProc) verifyWall(pid int) error {
	if !p.walled {
		return nil
	}
	mine, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%w: wall: %w", ErrNotLaunched, err)
	}
	if mine == theirs {
		return fmt.Errorf("%w: pid %d is not behind the wall: it shares this process's network namespace", ErrNotLaunched, pid)
	}
	dev, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return fmt.Errorf("%w: wall: %w", ErrNotLaunched, err)
	}
	lines := strings.Split(strings.TrimSpace(string(dev)), "\n")
	for _, l := range lines[min(2, len(lines)):] { // two header lines
		if name, _, _ := strings.Cut(strings.TrimSpace(l), ":"); name != "lo" {
			return fmt.Errorf("%w: pid %d is not behind the wall: its network namespace has interface %q", ErrNotLaunched, pid, name)
		}
	}
	return nil
}
