// Command browser-agent is a read-only, policy-enforced research agent that drives a dedicated
// Chromium. Run "browser-agent help" for its subcommands.
package main

import (
	"os"

	"github.com/browser-agent/browser-agent/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
