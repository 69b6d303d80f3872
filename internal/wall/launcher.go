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
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// init takes over the process when it was started as the launcher, its inner half or the probe:
// before main, before TestMain, so that any program linking the bridge is a launcher.
func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case argProbe:
		os.Exit(report(probeInside()))
	case argInner:
		os.Exit(report(inner(os.Args[2:])))
	}
	for i, a := range os.Args[1:] {
		if strings.HasPrefix(a, argOuter) {
			rest := append(append([]string(nil), os.Args[1:i+1]...), os.Args[i+2:]...)
			os.Exit(outer(strings.TrimPrefix(a, argOuter), rest))
		}
	}
}

// report prints a role's error, the first line Playwright shows of a launch that failed.
func report(err error) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "browser-agent wall: %v\n", err)
		return 1
	}
	return 0
}

// probeInside is the probe's role in its namespace: lo up, and a listener on it.
func probeInside() error {
	if err := loopbackUp(); err != nil {
		return err
	}
	fd, err := listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// outer is the launcher: it starts the inner half in a new namespace with Playwright's pipe,
// takes the listener the inner half made on the proxy's address, relays each of its connections
// to the proxy, and exits with Chromium's status.
func outer(spec string, args []string) int {
	parts := strings.SplitN(spec, ",", 3)
	if len(parts) != 3 {
		return report(fmt.Errorf("bad launcher argument %q", spec))
	}
	kind, upstream, chromium := Kind(parts[0]), parts[1], parts[2]
	// The inner process dies with the thread that started it (PR_SET_PDEATHSIG): this one, which
	// stays until the process exits.
	runtime.LockOSThread()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return report(fmt.Errorf("socketpair: %w", err))
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "handoff"), os.NewFile(uintptr(pair[1]), "handoff")
	exe, err := Executable()
	if err != nil {
		return report(err)
	}
	inner := []string{argInner, upstream, chromium}
	if socket, rest := devToolsArg(args); socket != "" {
		inner, args = append(inner, argDevTools+socket), rest
	}
	cmd := exec.Command(exe, append(inner, args...)...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{inherited(pipeIn), inherited(pipeOut), theirs}
	cmd.SysProcAttr = sysProcAttr(kind)
	if err := cmd.Start(); err != nil {
		return report(fmt.Errorf("start in a network namespace (%s): %w", kind, err))
	}
	// Only Chromium holds the handoff's other end from here: when it exits, the handoff ends. This
	// process keeps its copy of Playwright's pipe until Chromium has exited and its status is on
	// stderr: Playwright kills the launcher's process group when it sees the pipe close, and would
	// otherwise do so before this process could say how Chromium ended.
	theirs.Close()
	pipes := cmd.ExtraFiles[:2]
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	var sent sync.WaitGroup // what the browser wrote, still on its way to the proxy
	accepting := make(chan struct{})
	ln, lerr := receiveListener(mine)
	if lerr == nil {
		go func() { forward(ln, upstream, &sent); close(accepting) }()
	} else { // the inner half failed, said why on stderr, and exits
		close(accepting)
	}
	mine.Close()
	err = cmd.Wait()
	// Say how Chromium ended on stderr, where the driver's launch error keeps it (bridge.launchExit
	// reads it), before the pipe closes: Playwright may kill this process once it has.
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		fmt.Fprintf(os.Stderr, "%s%s\n", ExitLinePrefix, exitStatus(ee))
	}
	for _, f := range pipes {
		if f != nil {
			f.Close()
		}
	}
	// A connection the browser made just before it exited may still wait in the listener's queue,
	// not yet accepted (and so not yet counted in sent): stop forward, then accept what is queued.
	if lerr == nil {
		tl := ln.(*net.TCPListener) // receiveListener's socket is a TCP one (listen)
		_ = tl.SetDeadline(time.Unix(1, 0))
		<-accepting
		drainQueued(tl, upstream, &sent)
		tl.Close()
	}
	// What the browser wrote before it exited still reaches the proxy, a bounded time.
	drained := make(chan struct{})
	go func() { sent.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return report(err)
	}
	return 0
}

// ExitLinePrefix starts the line the launcher writes on stderr when Chromium ends with an error:
// "browser-agent wall: chromium ended: exit code 7" or "...: signal SIGSEGV".
const ExitLinePrefix = "browser-agent wall: chromium ended: "

// exitStatus is how a process ended, as the bridge words it: "exit code N" or "signal NAME".
func exitStatus(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit code %d", ee.ExitCode())
}

// inherited is the file descriptor fd this process was started with, or nil when it has none.
func inherited(fd int) *os.File {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd))
}

// receiveListener reads the listening socket the inner half sends over the handoff.
func receiveListener(f *os.File) (net.Listener, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("handoff: no listener sent")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("handoff: no listener sent")
	}
	lf := os.NewFile(uintptr(fds[0]), "listener")
	defer lf.Close()
	return net.FileListener(lf)
}

// drainQueued relays the connections still queued on ln, without waiting: the browser has
// exited, so every connection it made is queued already (accept on the non-blocking socket until
// it has none).
func drainQueued(ln *net.TCPListener, upstream string, sent *sync.WaitGroup) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC)
			if err != nil {
				return // EAGAIN: the queue is empty
			}
			f := os.NewFile(uintptr(nfd), "queued")
			c, err := net.FileConn(f)
			f.Close()
			if err != nil {
				continue
			}
			sent.Add(1)
			go relay(c, upstream, sent.Done)
		}
	})
}

// forward relays every connection made to ln (inside the namespace) to upstream (outside it):
// the only way out of the namespace, and only to the run's proxy. It returns when ln fails or
// its deadline (set, in the past, once the browser exited) stops it.
// sent counts the connections whose bytes towards the proxy are not all relayed yet.
func forward(ln net.Listener, upstream string, sent *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		sent.Add(1)
		go relay(c, upstream, sent.Done)
	}
}

// relay copies c to upstream and back; out is called once c's bytes are all sent on.
func relay(c net.Conn, upstream string, out func()) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", upstream, 10*time.Second)
	if err != nil {
		out()
		return
	}
	defer u.Close()
	back := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, u)
		_ = c.(*net.TCPConn).CloseWrite()
		close(back)
	}()
	_, _ = io.Copy(u, c)
	_ = u.(*net.TCPConn).CloseWrite()
	out()
	<-back
}

// inner runs in the new namespace: lo up, a listener on the proxy's address handed to the
// launcher, the capability dropped, then Chromium in its place.
func inner(args []string) error {
	if len(args) < 2 {
		return errors.New("inner: missing arguments")
	}
	upstream, chromium := args[0], args[1]
	if err := loopbackUp(); err != nil {
		return err
	}
	fd, err := listen(upstream)
	if err != nil {
		return err
	}
	if err := unix.Sendmsg(handoff, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	unix.Close(fd)
	unix.Close(handoff)
	if len(args) > 2 && strings.HasPrefix(args[2], argDevTools) {
		return innerDevTools(strings.TrimPrefix(args[2], argDevTools), chromium, args[3:])
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	argv := append([]string{chromium}, args[2:]...)
	if err := unix.Exec(chromium, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", chromium, err)
	}
	return nil
}

// loopbackUp brings up lo, the namespace's only interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// listen makes a listening TCP socket on addr (IPv4 ip:port), close-on-exec.
func listen(addr string) (int, error) {
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("listen %s: %w", addr, err)
	}
	sa := &unix.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen %s: %w", addr, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen %s: %w", addr, err)
	}
	return fd, nil
}
