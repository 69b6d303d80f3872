package wall

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// available is the machine's namespace kind; the wall's tests fail, never skip, without one.
func available(t *testing.T) Availability {
	t.Helper()
	a := Probe()
	if a.Err != nil {
		t.Fatalf("the wall's tests need root or unprivileged user namespaces: %v", a.Err)
	}
	return a
}

// TestWallShell runs a shell in place of Chromium, through the launcher, and has it try every
// way out: TCP and UDP to canaries on loopback and on the machine's own address, and the proxy's
// address, which must reach the upstream (and only it) through the forwarder. Both kinds of
// namespace are tried (a user namespace also works as root); the control, the same shell not
// walled, reaches every canary.
func TestWallShell(t *testing.T) {
	kinds := []Kind{available(t).Kind}
	if kinds[0] == Root {
		kinds = append(kinds, User)
	}
	hosts := []string{"127.0.0.1", testutil.HostIPv4(t)}
	for _, k := range append(kinds, "") {
		name := string(k)
		if k == "" {
			name = "control"
		}
		t.Run(name, func(t *testing.T) {
			can := testutil.NewCanaries(t, "")
			up, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			got := make(chan string, 1)
			go func() {
				c, err := up.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				got <- strings.TrimSpace(line)
			}()
			tp, up4 := can.TCPPort(), can.UDPPort()
			var script strings.Builder
			for _, h := range hosts {
				fmt.Fprintf(&script, "(echo x > /dev/tcp/%s/%d) 2>/dev/null; (echo x > /dev/udp/%s/%d) 2>/dev/null; ", h, tp, h, up4)
			}
			fmt.Fprintf(&script, "echo through-the-forwarder > /dev/tcp/%s", strings.Replace(up.Addr().String(), ":", "/", 1))
			var cmd *exec.Cmd
			if k == "" {
				cmd = exec.Command("/bin/bash", "-c", script.String())
			} else {
				exe, arg, err := Command(k, "/bin/bash", up.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(exe, "-c", script.String(), arg)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			select {
			case line := <-got:
				if line != "through-the-forwarder" {
					t.Errorf("upstream got %q", line)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the proxy's address did not reach the upstream")
			}
			time.Sleep(200 * time.Millisecond) // late UDP datagrams
			seen := can.Take()
			if k != "" && len(seen) > 0 {
				t.Errorf("walled shell reached the canaries: %v", seen)
			}
			if k == "" && (len(seen["tcp"]) != len(hosts) || len(seen["udp"]) != len(hosts)) {
				t.Errorf("control reached %v, want tcp and udp from each of %v", seen, hosts)
			}
		})
	}
}

func TestCommandRefuses(t *testing.T) {
	for _, up := range []string{"10.0.0.1:8080", "localhost:80", "[::1]:80", "127.0.0.1"} {
		if _, _, err := Command(Root, "/bin/true", up); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Command(%q) = %v, want an error naming loopback", up, err)
		}
	}
	if _, _, err := Command("", "/bin/true", "127.0.0.1:1"); err == nil {
		t.Errorf("Command without a kind: no error")
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

// BenchmarkLauncher is the launcher's own cost, without Chromium: /bin/true started through it
// (a new network namespace, lo up, the listener handed out, exec) against /bin/true started
// directly, each iteration timing both (interleaved). added-ns/op is the wall's cost per launch.
func BenchmarkLauncher(b *testing.B) {
	a := Probe()
	if a.Err != nil {
		b.Fatal(a.Err)
	}
	up, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer up.Close()
	for _, k := range []Kind{a.Kind, User} {
		b.Run(string(k), func(b *testing.B) {
			exe, arg, err := Command(k, "/bin/true", up.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			var walled, direct time.Duration
			for range b.N {
				start := time.Now()
				if out, err := exec.Command(exe, arg).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				walled += time.Since(start)
				start = time.Now()
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Fatal(err)
				}
				direct += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(float64(walled.Nanoseconds())/n, "walled-ns/op")
			b.ReportMetric(float64(direct.Nanoseconds())/n, "direct-ns/op")
			b.ReportMetric(float64((walled-direct).Nanoseconds())/n, "added-ns/op")
		})
	}
}

// BenchmarkProbe is Probe's cost, paid once per process (the first launch).
func BenchmarkProbe(b *testing.B) {
	for range b.N {
		if a := probe(os.Geteuid() == 0); a.Err != nil {
			b.Fatal(a.Err)
		}
	}
}
