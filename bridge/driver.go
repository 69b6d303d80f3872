package bridge

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mxschmitt/playwright-go"
)

//go:embed js/cli.js
var cliLauncher string

// runMu serializes the driver starts of this process: startDriver sets PLAYWRIGHT_CLI_PATH for
// the length of one playwright.Run.
var runMu sync.Mutex

// startDriver starts the Playwright driver of dir with playwright.Run, through a launcher that
// answers playwright-go's version check without loading Playwright (js/cli.js): every driver
// start (a run, an MCP session, the live demo's server, a test) is 0.6 s shorter, more on a
// busy machine. The version itself was checked before (checkDriverDir). Without a place to keep
// the launcher, or when the operator set PLAYWRIGHT_CLI_PATH, the driver starts as
// playwright-go starts it. Another playwright.Run of this process that reads the variable
// meanwhile starts through the same launcher, which does what cli.js does.
func startDriver(dir string, opts *playwright.RunOptions, logf func(string, ...any)) (*playwright.Playwright, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if os.Getenv("PLAYWRIGHT_CLI_PATH") == "" {
		launcher, err := writeLauncher(filepath.Join(dir, "package", "cli.js"))
		if err != nil {
			logf("bridge: driver launcher: %v (starting the driver without it)", err)
		} else {
			os.Setenv("PLAYWRIGHT_CLI_PATH", launcher)
			defer os.Unsetenv("PLAYWRIGHT_CLI_PATH")
		}
	}
	return playwright.Run(opts)
}

// writeLauncher writes js/cli.js for cli into the user's cache directory, once per cli path and
// launcher text (the file name holds a hash of both), and returns its path. It lives in the
// user's own cache directory (browser-agent/ created 0700, the file 0600 and renamed into
// place whole), and a file found there is used only if it holds exactly what this would write.
func writeLauncher(cli string) (string, error) {
	q, err := json.Marshal(cli)
	if err != nil {
		return "", err
	}
	text := []byte(strings.Replace(cliLauncher, "/*CLI*/''", string(q), 1))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "browser-agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	path := filepath.Join(dir, "driver-cli-"+hex.EncodeToString(sum[:8])+".js")
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, text) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, "driver-cli-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(text)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", tmp.Name(), errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}
