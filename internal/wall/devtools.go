package wall

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// argDevTools asks the launcher for a walled Chromium whose DevTools endpoint is reachable from
// outside the namespace on one unix socket, and nowhere else (DevToolsCommand).
const argDevTools = "--browser-agent-wall-devtools="

// DevToolsCommand is Command for a browser driven over CDP from outside its namespace (the MCP
// guard's, whose upstream attaches with --cdp-endpoint): Chromium listens for DevTools on a port
// of the namespace's own loopback, which nothing outside the namespace can reach, and the inner
// half, which stays in the namespace as Chromium's parent, relays each connection made to the
// unix socket at socket (a path in a directory only the caller can enter) to that port. A unix
// socket bound to a path is reached through the file system, not the network, so the namespace
// does not hide it; no TCP port on the machine's own loopback is opened for it.
//
// The launch's other arguments are Chromium's; the caller adds no --remote-debugging-* flag.
func DevToolsCommand(k Kind, chromium, upstream, socket string) (exe string, args []string, err error) {
	exe, arg, err := Command(k, chromium, upstream)
	if err != nil {
		return "", nil, err
	}
	if socket == "" || strings.Contains(socket, ",") {
		return "", nil, fmt.Errorf("the DevTools socket %q is not a usable path", socket)
	}
	return exe, []string{arg, argDevTools + socket}, nil
}

// devToolsArg takes the DevTools socket out of args: the socket, and args without it.
func devToolsArg(args []string) (socket string, rest []string) {
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, argDevTools); ok {
			socket = s
			continue
		}
		rest = append(rest, a)
	}
	return socket, rest
}

// innerDevTools is the inner half of a DevTools launch, in the namespace after the proxy's
// listener was handed out: it picks a free port of the namespace's loopback for DevTools, listens
// on the unix socket, starts Chromium as its child (without the capability it kept for lo) and
// relays the socket's connections to the DevTools port until Chromium exits, with its status.
func innerDevTools(socket, chromium string, args []string) error {
	runtime.LockOSThread() // Chromium dies with this thread (PR_SET_PDEATHSIG)
	port, err := freePort()
	if err != nil {
		return err
	}
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("devtools socket: %w", err)
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		return fmt.Errorf("devtools socket: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	cmd := exec.Command(chromium, append(append([]string(nil), args...),
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+strconv.Itoa(port))...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", chromium, err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	target := "127.0.0.1:" + strconv.Itoa(port)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relayTo(c, target)
		}
	}()
	err = cmd.Wait()
	ln.Close()
	os.Remove(socket)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ee.ExitCode())
	}
	return err
}

// relayTo copies c to the DevTools port and back; Chromium may still be starting, so the dial
// is tried again for a while.
func relayTo(c net.Conn, target string) {
	defer c.Close()
	var u net.Conn
	var err error
	for i := 0; i < 100; i++ {
		if u, err = net.DialTimeout("tcp", target, time.Second); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(c, u); c.(*net.UnixConn).CloseWrite(); close(done) }()
	_, _ = io.Copy(u, c)
	_ = u.(*net.TCPConn).CloseWrite()
	<-done
}

// freePort is a port nothing listens on in this namespace's loopback. Only this process and
// Chromium run in the namespace, so it stays free until Chromium takes it.
func freePort() (int, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("devtools port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Verify checks that pid runs behind a wall: in a network namespace other than this process's,
// whose only interface is lo.
func Verify(pid int) error {
	mine, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("wall: %w", err)
	}
	if mine == theirs {
		return fmt.Errorf("pid %d is not behind the wall: it shares this process's network namespace", pid)
	}
	dev, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return fmt.Errorf("wall: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(dev)), "\n")
	for _, l := range lines[min(2, len(lines)):] { // two header lines
		if name, _, _ := strings.Cut(strings.TrimSpace(l), ":"); name != "lo" {
			return fmt.Errorf("pid %d is not behind the wall: its network namespace has interface %q", pid, name)
		}
	}
	return nil
}
