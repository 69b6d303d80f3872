package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// launchArgs are the Chromium switches of every session, on top of Playwright's defaults.
var launchArgs = []string{
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--disable-quic",
	"--no-pings",
	"--webrtc-ip-handling-policy=disable_non_proxied_udp",
	"--force-webrtc-ip-handling-policy",
	"--disable-domain-reliability",
	"--dns-prefetch-disable",
	"--no-service-autorun",
	"--password-store=basic",
	"--use-mock-keychain",
	"--disable-default-apps",
	"--deny-permission-prompts",
	"--site-per-process",
}

// browserProc is the session's Chromium as a process: its fresh profile, how it is started
// (behind the wall or not, wall.go), and the check that the browser behind the context is it.
type browserProc struct {
	cfg     *config
	pol     *policy.Policy // its wall key
	profile string
	version string
	pid     int
	ua      string // the browser's User-Agent, sent on the bridge's own document fetches
	wall    string // the audit's line about the operating system's wall (wall.go)
	walled  bool   // Chromium was launched behind it
}

// command is the executable Playwright starts for the session (Chromium, or the wall's launcher)
// and its arguments on top of Playwright's defaults, the browser's proxy at proxyServer.
func (p *browserProc) command(proxyServer string) (exe string, args []string, err error) {
	exe, wallArgs, err := p.planWall(proxyServer)
	if err != nil {
		return "", nil, err
	}
	return exe, append(append(append([]string(nil), launchArgs...), p.cfg.extraArgs...), wallArgs...), nil
}

// launchOptions are the Playwright options of the session's Chromium: exe (Chromium, or the
// wall's launcher) with args on top of Playwright's defaults, behind proxy, bounded by timeout.
func (p *browserProc) launchOptions(exe string, args []string, proxy *playwright.Proxy, timeout time.Duration) playwright.BrowserTypeLaunchPersistentContextOptions {
	return playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath:  playwright.String(exe),
		Headless:        playwright.Bool(true),
		ChromiumSandbox: playwright.Bool(os.Geteuid() != 0), // Playwright adds --no-sandbox unless this is true
		Args:            args,
		Proxy:           proxy,
		ServiceWorkers:  playwright.ServiceWorkerPolicyBlock,
		AcceptDownloads: playwright.Bool(false),
		DownloadsPath:   playwright.String(filepath.Join(p.profile, "downloads")),
		ArtifactsDir:    playwright.String(filepath.Join(p.profile, "artifacts")),
		Timeout:         playwright.Float(float64(timeout.Milliseconds())),
		HandleSIGINT:    playwright.Bool(false),
		HandleSIGTERM:   playwright.Bool(false),
		HandleSIGHUP:    playwright.Bool(false),
	}
}

// verifyLaunched is the launch's check of the browser; tests replace it to see a failing check
// refuse the session.
var verifyLaunched = (*Session).verifyBrowser

// verifyBrowser checks the session's browser (browserProc.verify).
func (s *Session) verifyBrowser(ctx context.Context) error { return s.proc.verify(ctx, s.bctx) }

// verify checks that the browser behind bctx is the one this process launched: the browser
// process reported over CDP must be a descendant of this process and run with this session's
// fresh user data directory. The bridge never attaches to a browser it did not launch.
func (p *browserProc) verify(ctx context.Context, bctx playwright.BrowserContext) error {
	b := bctx.Browser()
	if b == nil {
		return fmt.Errorf("%w: no browser behind the context", ErrNotLaunched)
	}
	p.version = b.Version()
	if p.version == "" {
		return fmt.Errorf("%w: browser reports no version", ErrNotLaunched)
	}
	cdp, err := b.NewBrowserCDPSession()
	if err != nil {
		return fmt.Errorf("%w: browser session: %w", ErrNotLaunched, err)
	}
	defer func() { _ = cdp.Detach() }()
	var info struct {
		ProcessInfo []struct {
			Type string `json:"type"`
			ID   int    `json:"id"`
		} `json:"processInfo"`
	}
	if err := cdpCall(ctx, cdp, "SystemInfo.getProcessInfo", nil, &info); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLaunched, err)
	}
	var ver struct {
		UserAgent string `json:"userAgent"`
	}
	if err := cdpCall(ctx, cdp, "Browser.getVersion", nil, &ver); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLaunched, err)
	}
	p.ua = ver.UserAgent
	for _, pi := range info.ProcessInfo {
		if pi.Type == "browser" {
			p.pid = pi.ID
		}
	}
	if p.pid <= 0 {
		return fmt.Errorf("%w: no browser process reported", ErrNotLaunched)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		p.cfg.logf("bridge: no /proc, browser pid %d not checked", p.pid)
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
	if err != nil {
		return fmt.Errorf("%w: pid %d: %w", ErrNotLaunched, p.pid, err)
	}
	if !strings.Contains(string(cmdline), "--user-data-dir="+p.profile+"\x00") {
		return fmt.Errorf("%w: pid %d does not use this session's profile", ErrNotLaunched, p.pid)
	}
	if !isDescendant(p.pid, os.Getpid()) {
		return fmt.Errorf("%w: pid %d is not a child of this process", ErrNotLaunched, p.pid)
	}
	return p.verifyWall(p.pid)
}

// isDescendant reports whether pid has ancestor among its parents (Linux /proc).
func isDescendant(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// Fields after the command name, which is in parentheses and may hold spaces.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}
