// Command plaincold is the plain playwright-go program the cold-start benchmark measures
// "browser-agent run --preset lookup" against: it starts the embedded demo site in process (as
// the run does), starts the Playwright driver, launches Chromium, reads the three pages of the
// lookup (search, record, registry B source: text, and links or fields), and stops. No policy,
// proxy, audit store or checks.
//
//	go run ./bench/plaincold    # with BROWSER_AGENT_DRIVER_DIR set, as for browser-agent
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/browser-agent/browser-agent/bridge"
	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/mxschmitt/playwright-go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "plaincold:", err)
		os.Exit(1)
	}
}

const (
	jsLinks  = `() => Array.from(document.querySelectorAll('a[href]'), a => [a.href, a.innerText])`
	jsFields = `() => Array.from(document.querySelectorAll('dl dt'), dt => [dt.innerText, dt.nextElementSibling ? dt.nextElementSibling.innerText : ''])`
)

func run() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := demosite.Start(ctx, "127.0.0.1:0", "127.0.0.1:0", demosite.Options{Seed: 1, Records: demosite.DefaultRecords})
	if err != nil {
		return err
	}
	defer srv.Close()
	drv, err := bridge.DriverDir()
	if err != nil {
		return err
	}
	chromium, err := bridge.ChromiumPath()
	if err != nil {
		return err
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: drv, SkipInstallBrowsers: true, Stdout: os.Stderr})
	if err != nil {
		return err
	}
	defer pw.Stop()
	browser, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath:  playwright.String(chromium),
		Headless:        playwright.Bool(true),
		ChromiumSandbox: playwright.Bool(os.Geteuid() != 0),
	})
	if err != nil {
		return err
	}
	defer browser.Close()
	page, err := browser.NewPage()
	if err != nil {
		return err
	}
	id := "SYN-0042"
	for _, p := range []struct {
		url      string
		evaluate string
	}{
		{srv.URL + "/search?q=" + id, jsLinks},
		{srv.URL + "/records/" + id, jsFields},
		{srv.URL + "/sources/b/" + id, jsFields},
	} {
		if _, err := page.Goto(p.url, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			return err
		}
		if _, err := page.InnerText("body"); err != nil {
			return err
		}
		if _, err := page.Evaluate(p.evaluate); err != nil {
			return err
		}
	}
	return nil
}
