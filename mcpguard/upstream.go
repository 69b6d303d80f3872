package mcpguard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/browser-agent/browser-agent/proxy"
)

// wallFlags are upstream command-line flags that would take its browser out from behind the
// egress proxy, or let the page run code the guard did not see: the guard refuses a command that
// has one.
var wallFlags = []string{
	"--config", "--proxy-server", "--proxy-bypass", "--cdp-endpoint", "--cdp-header", "--endpoint",
	"--extension", "--ignore-https-errors", "--browser", "--allow-unrestricted-file-access",
	"--init-script", "--init-page", "--port", "--host", "--remote-header",
}

// ChromiumFlags are the flags the upstream's Chromium gets besides the proxy's: no background
// requests of its own (they would only be refused by the proxy), no QUIC (UDP around the proxy).
var ChromiumFlags = []string{
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--no-first-run", "--disable-quic",
}

// EnvConfig is the variable through which Playwright MCP reads the guard's config file. Every
// other PLAYWRIGHT_MCP_* variable is dropped from the upstream's environment.
const EnvConfig = "PLAYWRIGHT_MCP_CONFIG"

// CheckCommand says what is wrong with an upstream command, or nil.
func CheckCommand(cmd []string) error {
	if len(cmd) == 0 || cmd[0] == "" {
		return fmt.Errorf("no upstream command: give it after --, e.g. -- npx @playwright/mcp --headless --isolated")
	}
	for _, a := range cmd[1:] {
		name, _, _ := strings.Cut(a, "=")
		for _, f := range wallFlags {
			if name == f {
				return fmt.Errorf("upstream flag %s is not allowed: the guard sets the browser's config, proxy and endpoint itself", f)
			}
		}
	}
	return nil
}

// upstreamEnv is env without PLAYWRIGHT_MCP_* variables, with EnvConfig naming file.
func upstreamEnv(env []string, file string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "PLAYWRIGHT_MCP_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, EnvConfig+"="+file)
}

// writeConfig writes Playwright MCP's config file into dir: its Chromium behind px, trusting the
// proxy's per-run key and nothing else it cannot verify, no snapshot files, no page-registered
// tools, no service workers or downloads. The file holds the proxy's credential: mode 0600, in
// the guard's own directory, removed on Close.
//
// With endpoint (the guard's own browser behind the wall, guard.startBrowser) the upstream
// attaches to that browser over CDP and makes its own context in it, with the proxy's credential;
// without, it launches its own Chromium behind px.
//
// bypass is a test's: names and addresses the browser reaches around the proxy (a browser that
// ignores its proxy, for the wall's tests); "" in every real run.
func writeConfig(dir string, px *proxy.Proxy, extra []string, endpoint, bypass string) (string, error) {
	user, pass := px.Credentials()
	pr := map[string]string{"server": px.Server(), "username": user, "password": pass}
	if bypass != "" {
		pr["bypass"] = bypass
	}
	args := append(append(append([]string{}, px.ChromiumArgs()...), ChromiumFlags...), extra...)
	br := map[string]any{
		"browserName": "chromium",
		"launchOptions": map[string]any{
			"args":  args,
			"proxy": pr,
		},
		"contextOptions": map[string]any{
			"proxy":             pr,
			"serviceWorkers":    "block",
			"acceptDownloads":   false,
			"ignoreHTTPSErrors": false,
		},
	}
	if endpoint != "" {
		delete(br, "launchOptions")
		br["cdpEndpoint"] = endpoint
		br["isolated"] = true // a context of its own, made with the proxy's credential
	}
	cfg := map[string]any{
		"browser":     br,
		"snapshot":    map[string]any{"mode": "none"},
		"webmcp":      false,
		"saveSession": false,
		"outputDir":   filepath.Join(dir, "output"),
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "playwright-mcp.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return "", err
	}
	return file, nil
}
