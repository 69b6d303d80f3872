package cli

import (
	"net/http"
	"os"

	"github.com/browser-agent/browser-agent/mcpguard"
	"github.com/browser-agent/browser-agent/mcpserver"
)

// guardCmd is "browser-agent guard [--policy FILE] [--db FILE] [--http ADDR] -- COMMAND [ARGS...]".
func guardCmd(e *env, args []string) error {
	fs := newFlags(e, "guard", "[--policy FILE] [--db FILE] [--http ADDR] -- COMMAND [ARGS...]")
	sf := addServerFlags(fs)
	// The mode is the policy's, so that what a run may do is read in one file: the flag that
	// chose it before only says where it went.
	write := fs.Bool("write", false, "gone: set guard: mode: write in the policy file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *write {
		return usageError("--write is not a flag: the policy chooses the mode; set \"guard:\" with \"mode: write\" in the policy file (docs/guard-write-mode.md)")
	}
	command := fs.Args()
	if err := mcpguard.CheckCommand(command); err != nil {
		return usageError("%v", err)
	}
	ctx, prep, addr, err := sf.start(e, "guard")
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol
	popts, err := proxyOptions(os.Getenv(EnvUpstreamRoots))
	if err != nil {
		return err
	}
	g, err := mcpguard.Start(ctx, mcpguard.Config{
		Policy: pol, Command: command, Store: store, ProxyOptions: popts, Stderr: e.stderr, Logf: stderrLogf(e),
	})
	if err != nil {
		return err
	}
	if addr == "" {
		return g.Run(ctx, stdioTransport(e, "guard", store.Path()))
	}
	err = serveMCPHTTP(ctx, e, "guard", addr, store.Path(), func(o mcpserver.HTTPOptions) http.Handler {
		return mcpserver.HTTPHandler(g.Server(), mcpserver.DefaultIdleTimeout, o)
	})
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	return err
}
