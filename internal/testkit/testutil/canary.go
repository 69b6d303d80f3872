package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Canaries listen on every address of the machine for what must not arrive (the wall's tests): a
// TCP listener, a UDP socket and, when asked, a DNS server on UDP port 53. Each counts where what
// reached it came from.
type Canaries struct {
	TCP net.Listener
	UDP net.PacketConn
	DNS net.PacketConn // nil unless NewCanaries was given a name

	mu   sync.Mutex
	hits map[string][]string // "tcp", "udp", "dns" -> the senders' addresses
}

// NewCanaries starts the canaries; they close with the test. With dnsName, a DNS server on UDP
// port 53 (root only) counts the queries that hold dnsName.
func NewCanaries(t testing.TB, dnsName string) *Canaries {
	t.Helper()
	c := &Canaries{hits: map[string][]string{}}
	var err error
	if c.TCP, err = net.Listen("tcp4", "0.0.0.0:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.TCP.Close() })
	if c.UDP, err = net.ListenPacket("udp4", "0.0.0.0:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.UDP.Close() })
	go func() {
		for {
			conn, err := c.TCP.Accept()
			if err != nil {
				return
			}
			c.hit("tcp", conn.RemoteAddr().String())
			conn.Close()
		}
	}()
	go c.read("udp", c.UDP, "")
	if dnsName != "" {
		holdDNSPort(t)
		if c.DNS, err = net.ListenPacket("udp4", "0.0.0.0:53"); err != nil {
			t.Fatalf("the DNS canary needs UDP port 53 (run as root): %v", err)
		}
		t.Cleanup(func() { c.DNS.Close() })
		go c.read("dns", c.DNS, dnsName)
	}
	return c
}

// dnsPortLock is the file whose lock a DNS canary holds while it has UDP port 53.
var dnsPortLock = filepath.Join(os.TempDir(), "browser-agent-dns-canary.lock")

// holdDNSPort waits until no DNS canary of another test process holds UDP port 53 and holds it
// for t, until t's cleanups after it (the canary's close) have run. go test runs packages in
// processes side by side (as many as the machine has cores), and the wall tests of two packages
// each bind port 53: the second failed at once ("address already in use").
func holdDNSPort(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(dnsPortLock, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("the DNS canary's lock %s: %v", dnsPortLock, err)
	}
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Minute):
		err = fmt.Errorf("another test process held it for 10 minutes")
	}
	if err != nil {
		f.Close()
		t.Fatalf("the DNS canary's lock %s: %v", dnsPortLock, err)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}

// TCPPort and UDPPort are the canaries' ports.
func (c *Canaries) TCPPort() int { return c.TCP.Addr().(*net.TCPAddr).Port }
func (c *Canaries) UDPPort() int { return c.UDP.LocalAddr().(*net.UDPAddr).Port }

// read counts the datagrams of pc, those that hold want when it is not "".
func (c *Canaries) read(kind string, pc net.PacketConn, want string) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if want == "" || strings.Contains(string(buf[:n]), want) {
			c.hit(kind, from.String())
		}
	}
}

func (c *Canaries) hit(kind, from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hits[kind] = append(c.hits[kind], from)
}

// Take returns what reached the canaries since the last Take, by kind.
func (c *Canaries) Take() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.hits
	c.hits = map[string][]string{}
	return out
}

// Reached is a wall test's positive control: it waits up to 15 s until every kind of canary
// (tcp, dns when there is a DNS canary, udp) was reached, and fails t for each that was not (the
// test cannot see the wall). It then waits a second and drops the late retries, so that they land
// in no other test.
func (c *Canaries) Reached(t testing.TB) {
	t.Helper()
	kinds := []string{"tcp", "udp"}
	if c.DNS != nil {
		kinds = []string{"tcp", "dns", "udp"}
	}
	seen := map[string][]string{}
	Eventually(15*time.Second, func() bool {
		for k, v := range c.Take() {
			seen[k] = append(seen[k], v...)
		}
		return len(seen) == len(kinds)
	})
	for _, k := range kinds {
		if len(seen[k]) == 0 {
			t.Errorf("control: the page's %s did not reach its canary: the test cannot see the wall (got %v)", k, seen)
		}
	}
	time.Sleep(time.Second)
	c.Take()
}

// Unreached waits a second for datagrams still in flight, then fails t if anything reached the
// canaries; who names what sent it.
func (c *Canaries) Unreached(t testing.TB, who string) {
	t.Helper()
	time.Sleep(time.Second)
	if hits := c.Take(); len(hits) > 0 {
		t.Errorf("%s reached the canaries: %v", who, hits)
	}
}

// ResolverWrapper is a script that runs chromium resolving names through dns (the DNS canary's
// address): it runs chromium in a mount namespace of its own where /etc/resolv.conf names only
// dns. Root only (unshare, mount).
func ResolverWrapper(t testing.TB, dns, chromium string) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver "+dns+"\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := filepath.Join(dir, "chromium")
	script := fmt.Sprintf("#!/bin/sh\nexec unshare -m --propagation private /bin/sh -c 'mount --bind %s /etc/resolv.conf && exec %s \"$@\"' sh \"$@\"\n",
		conf, chromium)
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return sh
}
