// Package wall is the operating system's wall around a run's Chromium (Linux): the browser runs in
// a network namespace of its own whose only interface is loopback, and the only way out of it is
// one listening socket on the address of the run's egress proxy, whose connections a forwarder
// outside the namespace relays to that proxy. Whatever the browser does (a direct TCP connection,
// UDP, DNS, QUIC, a flag that bypasses its proxy setting) reaches nothing else: there is no route.
//
// How a launch is walled: the executable Playwright starts is this program itself (Command), with
// a marker argument the package's init function recognises before main or TestMain runs (so the
// browser-agent binary and every test binary that links the bridge can serve as the launcher):
//
//	driver (node) → launcher (this program, outside: the forwarder)
//	                  └─ clone(CLONE_NEWNET [|CLONE_NEWUSER]) → this program again, inside:
//	                       lo up, listen on the proxy's address, hand the listener out, exec Chromium
//
// Playwright's pipe to the browser (file descriptors 3 and 4) is passed through, so the browser
// pid the bridge checks over CDP is Chromium's, a descendant of the process that launched it. The
// launcher exits with Chromium's status and is killed with it (Playwright kills the launch's
// process group; the inner process dies with the launcher, PR_SET_PDEATHSIG).
//
// As root the namespace is a network namespace alone; otherwise it is a network namespace inside
// a user namespace of one's own (unprivileged user namespaces), the user and group ids mapped to
// themselves and only CAP_NET_ADMIN kept, for bringing lo up, and dropped before Chromium starts.
// Probe says which of the two works here, or why neither does.
package wall

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Kind is how a namespace is made on this machine.
type Kind string

const (
	// Root: a network namespace alone (the process has CAP_SYS_ADMIN).
	Root Kind = "root"
	// User: a network namespace owned by a new user namespace (no privilege needed).
	User Kind = "user"
)

// Flags that select the package's roles in os.Args (see init).
const (
	argOuter = "--browser-agent-wall="
	argInner = "--browser-agent-wall-inner"
	argProbe = "--browser-agent-wall-probe"
)

// The inner process's file descriptors: Playwright's pipe (3, 4) and the socket the listener is
// handed out through.
const (
	pipeIn, pipeOut = 3, 4
	handoff         = 5
)

// Availability is what Probe found.
type Availability struct {
	Kind Kind  // how a namespace is made; "" when it cannot be
	Err  error // why no namespace can be made here; nil when Kind is set
}

// Status is the wall's line in a run's audit row: "on: ..." or "off: ...".
func (a Availability) Status() string {
	switch a.Kind {
	case Root:
		return "on: network namespace with loopback only (root)"
	case User:
		return "on: network namespace with loopback only (user namespace)"
	}
	return "off: " + a.Err.Error()
}

// ErrUnavailable is the error of a machine where no network namespace can be made.
var ErrUnavailable = errors.New("no network namespace can be made here")

var probed = sync.OnceValue(func() Availability { return probe(os.Geteuid() == 0) })

// Probe reports whether, and how, a network namespace can be made here: it starts this program
// once in one (the first call only; later calls return the same answer). As root it tries a
// network namespace alone, then one in a user namespace; otherwise the latter only.
func Probe() Availability { return probed() }

func probe(root bool) Availability {
	kinds := []Kind{User}
	if root {
		kinds = []Kind{Root, User}
	}
	var errs []string
	for _, k := range kinds {
		err := tryKind(k)
		if err == nil {
			return Availability{Kind: k}
		}
		errs = append(errs, fmt.Sprintf("%s: %v", k, err))
	}
	if !root {
		errs = append(errs, "not root")
	}
	return Availability{Err: fmt.Errorf("%w (%s)", ErrUnavailable, strings.Join(errs, "; "))}
}

// tryKind starts this program in a namespace of kind k; it brings lo up, listens on it and exits.
func tryKind(k Kind) error {
	exe, err := Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, argProbe)
	cmd.SysProcAttr = sysProcAttr(k)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return fmt.Errorf("%v: %s", err, firstLine(msg))
		}
		return err
	}
	return nil
}

// Executable is the launcher: this program's own file.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the launcher (this program's own file): %w", err)
	}
	return exe, nil
}

// Command returns the executable and the extra argument that make a Playwright launch of chromium
// walled, its egress proxy (or refusing proxy) at upstream, an IP:port on loopback: the forwarder
// listens on that same address inside the namespace, so the browser's proxy setting is unchanged.
func Command(k Kind, chromium, upstream string) (exe, arg string, err error) {
	if k != Root && k != User {
		return "", "", fmt.Errorf("no namespace kind %q", k)
	}
	ap, err := netip.ParseAddrPort(upstream)
	if err != nil || !ap.Addr().IsLoopback() || !ap.Addr().Is4() {
		return "", "", fmt.Errorf("the browser's proxy %q is not an IPv4 loopback address (the wall forwards to the same address inside)", upstream)
	}
	if exe, err = Executable(); err != nil {
		return "", "", err
	}
	return exe, argOuter + string(k) + "," + ap.String() + "," + chromium, nil
}

// sysProcAttr is how a process is started in a namespace of kind k. Its parent's death kills it.
func sysProcAttr(k Kind) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if k == User {
		uid, gid := os.Geteuid(), os.Getegid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		// The ids map to themselves, so a non-root user keeps no capability across exec but
		// this one, for lo; the inner process drops it before Chromium starts.
		a.AmbientCaps = []uintptr{capNetAdmin}
	}
	return a
}

const capNetAdmin = 12 // CAP_NET_ADMIN

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
