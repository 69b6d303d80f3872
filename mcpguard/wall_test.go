package mcpguard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/internal/testkit/testbrowser"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/internal/wall"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

var npmOnce = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(testbrowser.RepoRoot(), "bench", "playwright-mcp")
	cli := filepath.Join(dir, "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("npm ci in bench/playwright-mcp: %w", err)
		}
	}
	return cli, nil
})

// playwrightMCP is the pinned Playwright MCP's cli.js (bench/playwright-mcp), installed with npm ci.
func playwrightMCP(t testing.TB) string {
	t.Helper()
	cli, err := npmOnce()
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// wallPage makes the browser try to leave by every way the wall must stop (bridge's TestWall):
// direct TCP, DNS and UDP (WebRTC), each sent around the proxy by the test's flags. It writes
// "wall-finished" once all three have settled, or after 4 s.
const wallPage = `<!doctype html><title>wall</title><p>wall</p><script>
const host = %q, tcp = %d, udp = %d, key = %q, scheme = location.protocol;
let left = 3;
const one = () => { if (--left === 0) finish(); };
const finish = () => { if (!document.getElementById("f")) { const p = document.createElement("p"); p.id = "f"; p.textContent = "wall-finished"; document.body.append(p); } };
setTimeout(finish, 4000);
fetch(scheme + "//" + host + ":" + tcp + "/tcp-" + key, {mode: "no-cors"}).then(one, one);
fetch(scheme + "//dns-" + key + ".wall-canary.test:" + tcp + "/dns", {mode: "no-cors"}).then(one, one);
const pc = new RTCPeerConnection({iceServers: [{urls: "stun:" + host + ":" + udp}]});
pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") one(); };
pc.createDataChannel("x");
pc.createOffer().then(o => pc.setLocalDescription(o));
</script>`

// connectGuard is an MCP client of g, in memory.
func connectGuard(t *testing.T, g *Guard) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "wall-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultText(res), res.IsError
}

// TestGuardWall is the wall around the guard's browser, against a browser that ignores its
// proxy: the guard launches its Chromium (walled: required) with flags, and a context proxy
// setting, that send the canaries' address and names around the proxy, and Playwright MCP opens,
// through the guard, a page (over http and https, through the egress proxy) that tries direct
// TCP, DNS and UDP to canaries on the machine's own address. With the wall off (the positive
// control: Playwright MCP launches the same Chromium, with the same flags, itself) each reaches its
// canary; walled, none does, while the page itself still comes through the proxy, in the browser
// the guard launched.
func TestGuardWall(t *testing.T) {
	if a := wall.Probe(); a.Err != nil {
		t.Fatalf("the wall test needs root or unprivileged user namespaces: %v", a.Err)
	}
	cli := playwrightMCP(t)
	host := testutil.HostIPv4(t)
	can := testutil.NewCanaries(t, "wall-canary")
	chromium := testutil.ResolverWrapper(t, host, testbrowser.Chromium())
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, wallPage, host, can.TCPPort(), can.UDPPort(), strings.TrimPrefix(r.URL.Path, "/wall/"))
	})
	plainSrv, tlsSrv := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer plainSrv.Close()
	defer tlsSrv.Close()
	pol, err := policy.Parse(fmt.Appendf(nil, "version: 1\nsites:\n  - origin: %s\n    read: [/wall/*, /favicon.ico]\n  - origin: %s\n    read: [/wall/*, /favicon.ico]\n",
		plainSrv.URL, tlsSrv.URL), "wall")
	if err != nil {
		t.Fatal(err)
	}
	bypass := "<-loopback>," + host + ",*.wall-canary.test"
	flags := []string{
		"--proxy-bypass-list=<-loopback>;" + host + ";*.wall-canary.test",
		"--host-resolver-rules=MAP nothing.invalid 127.0.0.1",
		"--webrtc-ip-handling-policy=default",
	}
	for _, srv := range []*httptest.Server{plainSrv, tlsSrv} {
		scheme := strings.SplitN(srv.URL, ":", 2)[0]
		for _, mode := range []policy.WallMode{policy.WallOff, policy.WallRequired} {
			t.Run(scheme+"/"+string(mode), func(t *testing.T) {
				key := scheme + "-" + string(mode)
				start := time.Now()
				g, err := Start(context.Background(), Config{
					Policy:       pol,
					Command:      []string{"node", cli, "--headless", "--isolated", "--executable-path", chromium, "--no-sandbox"},
					ProxyOptions: []proxy.Option{proxy.WithUpstreamRoots(tlsSrv.Certificate())},
					ChromiumArgs: flags,
					Chromium:     chromium,
					Wall:         mode,
					Stderr:       &testutil.Buffer{},
					proxyBypass:  bypass,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				if got := g.Wall(); strings.HasPrefix(got, "on") != (mode == policy.WallRequired) {
					t.Fatalf("wall %q in mode %s", got, mode)
				}
				cs := connectGuard(t, g)
				url := srv.URL + "/wall/" + key
				if text, isErr := callText(t, cs, "browser_navigate", map[string]any{"url": url}); isErr {
					t.Fatalf("the page did not come through the guard: %s", text)
				}
				if text, isErr := callText(t, cs, "browser_wait_for", map[string]any{"text": "wall-finished"}); isErr {
					t.Fatalf("the page did not finish: %s", text)
				}
				t.Logf("%s after start and load; wall %s", time.Since(start).Round(time.Millisecond), g.Wall())
				if mode == policy.WallOff {
					if g.BrowserPID() != 0 {
						t.Errorf("wall off: the guard launched a browser (pid %d)", g.BrowserPID())
					}
					can.Reached(t)
					return
				}
				can.Unreached(t, "walled guard browser")
				// The page Playwright MCP opened is in the browser the guard launched, behind the wall.
				if g.browser == nil {
					t.Fatal("the guard launched no browser")
				}
				if err := wall.Verify(g.BrowserPID()); err != nil {
					t.Errorf("the guard's browser: %v", err)
				}
				urls, err := g.browser.pageURLs(context.Background())
				if err != nil || !slices.Contains(urls, url) {
					t.Errorf("the guard's browser does not show the page Playwright MCP opened: %v %v", urls, err)
				}
				// Closing the upstream's browser detaches it; the next call attaches again, to the
				// same browser.
				pid := g.BrowserPID()
				if text, isErr := callText(t, cs, "browser_close", map[string]any{}); isErr {
					t.Errorf("browser_close: %s", text)
				}
				if text, isErr := callText(t, cs, "browser_navigate", map[string]any{"url": url + "-again"}); isErr {
					t.Fatalf("navigate after browser_close: %s", text)
				}
				urls, err = g.browser.pageURLs(context.Background())
				if err != nil || !slices.Contains(urls, url+"-again") || g.BrowserPID() != pid {
					t.Errorf("after browser_close the upstream is not on the guard's browser (pid %d, was %d): %v %v", g.BrowserPID(), pid, urls, err)
				}
				if err := wall.Verify(pid); err != nil {
					t.Errorf("the guard's browser after browser_close: %v", err)
				}
			})
		}
	}
}

// TestGuardWallRequired: a policy that requires the wall is refused where no namespace can be
// made, before anything starts; auto goes on without it and says why.
func TestGuardWallRequired(t *testing.T) {
	old := wallProbe
	defer func() { wallProbe = old }()
	wallProbe = func() wall.Availability { return wall.Availability{Err: wall.ErrUnavailable} }
	pol, err := policy.Parse([]byte("version: 1\nwall: required\nsites:\n  - origin: http://127.0.0.1:1\n    read: [/]\n"), "req")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Config{Policy: pol, Command: []string{"/nonexistent/upstream"}})
	if err == nil || !strings.Contains(err.Error(), "wall: required") || !strings.Contains(err.Error(), "user namespaces") {
		t.Fatalf("Start with wall: required and no namespaces: %v, want the wall's setup error with its fix", err)
	}
	auto, err := policy.Parse([]byte("version: 1\nsites:\n  - origin: http://127.0.0.1:1\n    read: [/]\n"), "auto")
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{cfg: Config{Policy: auto}}
	kind, status, err := g.planWall()
	if err != nil || kind != "" || !strings.HasPrefix(status, "off: ") {
		t.Errorf("auto without namespaces: %q %q %v, want off and why", kind, status, err)
	}
}
