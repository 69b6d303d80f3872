package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/internal/wall"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
	"github.com/mxschmitt/playwright-go"
)

// wallPage makes Chromium try to leave by every way the wall must stop, the proxy bypassed for
// each by the launch's flags (wallBypass): a direct TCP connection (fetch to the canary's address),
// DNS (a name the system resolver must look up) and UDP (a WebRTC STUN binding request). Its
// title turns "done" once all three have settled, or after 4 s.
const wallPage = `<!doctype html><title>wall</title><p>wall</p><script>
const host = %q, tcp = %d, udp = %d, key = %q, scheme = location.protocol;
let left = 3;
const t0 = Date.now(), took = [];
const one = (what) => () => { took.push(what + ":" + (Date.now() - t0)); if (--left === 0) document.title = "done " + took.join(" "); };
setTimeout(() => { document.title = "done (timeout) " + took.join(" "); }, 4000);
// The page's own scheme: an https page may not fetch http (mixed content).
fetch(scheme + "//" + host + ":" + tcp + "/tcp-" + key, {mode: "no-cors"}).then(one("tcp"), one("tcp"));
fetch(scheme + "//dns-" + key + ".wall-canary.test:" + tcp + "/dns", {mode: "no-cors"}).then(one("dns"), one("dns"));
const pc = new RTCPeerConnection({iceServers: [{urls: "stun:" + host + ":" + udp}]});
pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") one("udp")(); };
pc.createDataChannel("x");
pc.createOffer().then(o => pc.setLocalDescription(o));
</script>`

// wallBypass are the flags a browser that ignores its proxy would run with: the canary's address
// and names outside the proxy, names resolved by the system, UDP allowed to WebRTC.
func wallBypass(host string) []string {
	return []string{
		"--proxy-bypass-list=<-loopback>;" + host + ";*.wall-canary.test",
		"--host-resolver-rules=MAP nothing.invalid 127.0.0.1",
		"--webrtc-ip-handling-policy=default",
	}
}

// TestWall is the operating system's wall against a browser that ignores its proxy: Chromium
// launched exactly as a session's (its executable, flags, proxy and wall: Session.command and
// launchOptions) but without the bridge's route and scripts, and with flags that send the
// canaries' address and names around the proxy, opens a page (over http and over https, through
// the run's egress proxy) that tries direct TCP, DNS and UDP to canaries on the machine's own
// address. Not walled (the positive control), each reaches its canary; walled, none does, while
// the page itself still comes through the proxy.
func TestWall(t *testing.T) {
	if a := wall.Probe(); a.Err != nil {
		t.Fatalf("the wall test needs root or unprivileged user namespaces: %v", a.Err)
	}
	host := testutil.HostIPv4(t)
	can := testutil.NewCanaries(t, "wall-canary")
	chromium := testutil.ResolverWrapper(t, host, testRT.cfg.chromium)
	tcpPort, udpPort := can.TCPPort(), can.UDPPort()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, wallPage, host, tcpPort, udpPort, strings.TrimPrefix(r.URL.Path, "/wall/"))
	})
	plainSrv, tlsSrv := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer plainSrv.Close()
	defer tlsSrv.Close()
	pol, err := policy.Parse(fmt.Appendf(nil, "version: 1\nsites:\n  - origin: %s\n    read: [/wall/*]\n  - origin: %s\n    read: [/wall/*]\n",
		plainSrv.URL, tlsSrv.URL), "wall")
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*httptest.Server{plainSrv, tlsSrv} {
		scheme := strings.SplitN(srv.URL, ":", 2)[0]
		for _, mode := range []policy.WallMode{policy.WallOff, policy.WallRequired} {
			t.Run(scheme+"/"+string(mode), func(t *testing.T) {
				key := scheme + "-" + string(mode)
				px, err := proxy.Start(context.Background(), pol, proxy.WithUpstreamRoots(tlsSrv.Certificate()))
				if err != nil {
					t.Fatal(err)
				}
				defer px.Close()
				user, pass := px.Credentials()
				cfg := testRT.cfg
				cfg.chromium = chromium
				cfg.extraArgs = append(px.ChromiumArgs(), wallBypass(host)...)
				cfg.wall = mode
				p := &browserProc{cfg: &cfg, pol: pol, profile: t.TempDir()}
				exe, args, err := p.command(px.Server())
				if err != nil {
					t.Fatal(err)
				}
				if got := p.wall; strings.HasPrefix(got, "on") != (mode == policy.WallRequired) {
					t.Fatalf("wall %q in mode %s", got, mode)
				}
				start := time.Now()
				bctx, err := testRT.pw.Chromium.LaunchPersistentContext(p.profile, p.launchOptions(exe, args,
					&playwright.Proxy{Server: px.Server(), Username: &user, Password: &pass}, 60*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer bctx.Close()
				page, err := bctx.NewPage()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := page.Goto(srv.URL + "/wall/" + key); err != nil {
					t.Fatalf("the page did not come through the proxy: %v", err)
				}
				if _, err := page.WaitForFunction(`document.title.startsWith("done")`, nil, playwright.PageWaitForFunctionOptions{Timeout: playwright.Float(20000)}); err != nil {
					t.Fatal(err)
				}
				title, _ := page.Title()
				t.Logf("%s after launch and load: %s", time.Since(start).Round(time.Millisecond), title)
				if mode == policy.WallOff {
					// The control: every kind reaches its canary (DNS retries; wait for all).
					can.Reached(t)
					return
				}
				can.Unreached(t, "walled browser")
			})
		}
	}
}

func withWallProbe(a wall.Availability) Option {
	return func(c *config) { c.wallProbe = func() wall.Availability { return a } }
}

// TestWallSession is the wall on a session's launch: by default (auto) a machine that can make a
// namespace walls the browser, and the launch checks it is (another network namespace, lo only);
// without namespaces auto goes on without the wall and says why, required refuses to launch and
// names the fix; off, from the policy or the launch, says which.
func TestWallSession(t *testing.T) {
	if a := wall.Probe(); a.Err != nil {
		t.Fatalf("the wall test needs root or unprivileged user namespaces: %v", a.Err)
	}
	none := withWallProbe(wall.Availability{Err: fmt.Errorf("%w (test: none here)", wall.ErrUnavailable)})
	offPol, err := policy.Parse([]byte(testFix.policyYAML+"wall: off\n"), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	reqPol, err := policy.Parse([]byte(testFix.policyYAML+"wall: required\n"), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	for _, tt := range []struct {
		name   string
		pol    *policy.Policy
		opts   []Option
		status string // the prefix of Wall()
		walled bool
	}{
		{"auto", testFix.pol, nil, "on: network namespace", true},
		{"required", reqPol, nil, "on: network namespace", true},
		{"auto without namespaces", testFix.pol, []Option{none}, "off: no network namespace can be made here (test: none here)", false},
		{"policy off", offPol, nil, "off: the policy turns it off", false},
		{"launch off", testFix.pol, []Option{WithWall(policy.WallOff)}, "off: turned off for this launch", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := testRT.Launch(ctx, tt.pol, tt.opts...)
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			defer s.Close()
			if !strings.HasPrefix(s.Wall(), tt.status) {
				t.Errorf("Wall() = %q, want %q...", s.Wall(), tt.status)
			}
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.PID()))
			if err != nil {
				t.Fatal(err)
			}
			if (ns != self) != tt.walled {
				t.Errorf("browser pid %d in network namespace %s (this process %s), walled %v", s.PID(), ns, self, tt.walled)
			}
			if _, err := s.Open(ctx, testFix.Site+"/p/"+newKey()+"/"); err != nil {
				t.Errorf("Open behind the wall: %v", err)
			}
		})
	}
	for name, opt := range map[string]Option{
		"required without namespaces":     none,
		"required with a proxy elsewhere": WithProxy("http://192.0.2.1:3128", "", ""),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := testRT.Launch(ctx, reqPol, opt)
			if err == nil {
				s.Close()
				t.Fatal("a policy that requires the wall launched a browser without it")
			}
			var se *SetupError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "wall: required") || !strings.Contains(se.StartReason(), FixWall) {
				t.Errorf("error %v: want a SetupError naming wall: required and the fix", err)
			}
		})
	}
}

// BenchmarkLaunchWall times a session's launch (Chromium up, checked, its page ready), walled and
// not, interleaved in each iteration (which goes first alternates): added-ns/op is the wall's cost per launch as a
// run pays it.
func BenchmarkLaunchWall(b *testing.B) {
	if a := wall.Probe(); a.Err != nil {
		b.Fatal(a.Err)
	}
	launch := func(m policy.WallMode) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		s, err := testRT.Launch(ctx, testFix.pol, WithWall(m))
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		return took
	}
	launch(policy.WallAuto) // warm up
	var on, off time.Duration
	for i := range b.N { // alternate which goes first
		if i%2 == 0 {
			on += launch(policy.WallAuto)
			off += launch(policy.WallOff)
		} else {
			off += launch(policy.WallOff)
			on += launch(policy.WallAuto)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(on.Nanoseconds())/n, "walled-ns/op")
	b.ReportMetric(float64(off.Nanoseconds())/n, "direct-ns/op")
	b.ReportMetric(float64((on-off).Nanoseconds())/n, "added-ns/op")
}
