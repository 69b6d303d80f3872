package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/mcpserver"
	"github.com/browser-agent/browser-agent/policy"
)

// EnvMCPToken names the variable that holds the bearer token of "mcp --http". It is read from
// the environment, never from the command line, where other users could see it.
const EnvMCPToken = "BROWSER_AGENT_MCP_TOKEN"

// MCPPath is where "mcp --http" serves the Streamable HTTP transport.
const MCPPath = "/mcp"

// mcpCmd is "browser-agent mcp [--policy FILE] [--http ADDR] [--db FILE] [--idle-timeout D]
// [--session-time D] [--browser-memory MIB] [--withheld-list]".
func mcpCmd(e *env, args []string) error {
	fs := newFlags(e, "mcp", "[--policy FILE] [--http ADDR] [--db FILE] [--idle-timeout D] [--session-time D] [--browser-memory MIB] [--withheld-list]")
	sf := addServerFlags(fs)
	idle := fs.Duration("idle-timeout", mcpserver.DefaultIdleTimeout, "close a session's browser after this long without a tool call")
	sessionTime := fs.Duration("session-time", coordinator.DefaultDeadline, "time budget of one browser session; when it is spent the next call starts a new one")
	memMiB := fs.Int64("browser-memory", mcpserver.DefaultMemoryLimit>>20, "MiB: a session whose browser processes (driver, Chromium, renderers) use more starts a new browser session on its next call; 0: no bound")
	withheldList := fs.Bool("withheld-list", false, "debug: at the end of each page read, list every text node withheld (reason, box, characters, tag; never its text) in the tool result")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *idle <= 0 || *sessionTime <= 0 {
		return usageError("--idle-timeout and --session-time must be positive")
	}
	if *memMiB < 0 || *memMiB > 1<<20 {
		return usageError("--browser-memory must be a number of MiB from 0 (no bound) to 1048576")
	}
	memLimit := *memMiB << 20
	if memLimit == 0 {
		memLimit = -1
	}

	ctx, prep, addr, err := sf.start(e, "mcp")
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol
	launch := coordinator.Launcher(launchMCP)
	if *withheldList {
		launch = launchWithheldList(os.Getenv(EnvUpstreamRoots))
	}
	srv, err := mcpserver.New(mcpserver.Config{
		Policy: pol, Launch: launch, Store: store, IdleTimeout: *idle, SessionTime: *sessionTime,
		MemoryLimit: memLimit, Logf: stderrLogf(e),
	})
	if err != nil {
		return err
	}
	if addr == "" {
		return srv.Run(ctx, stdioTransport(e, "mcp", store.Path()))
	}
	err = serveMCPHTTP(ctx, e, "mcp", addr, store.Path(), func(o mcpserver.HTTPOptions) http.Handler { return srv.HTTPHandler(o) })
	srv.Close()
	return err
}

// serverFlags are the flags the server commands (mcp, guard) share: --policy, --http and --db.
type serverFlags struct {
	policy, http, db *string
}

// addServerFlags registers the server commands' shared flags on fs.
func addServerFlags(fs *flag.FlagSet) serverFlags {
	return serverFlags{
		policy: policyFlag(fs, new(string)),
		http:   fs.String("http", "", "serve Streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio; a host other than loopback needs $"+EnvMCPToken),
		db:     dbFlag(fs, new(string), "audit database", false),
	}
}

// start is the start-up of a server command (mcp, guard) once its flags are read: the --http
// address checked (httpListenAddr; "" serves stdio), then startUp, which says on stderr, when
// there is no policy file, that the embedded demo site is served in-process.
func (f serverFlags) start(e *env, cmd string) (ctx context.Context, prep *prepared, addr string, err error) {
	addr, err = httpListenAddr(*f.http, os.Getenv(EnvMCPToken))
	if err != nil {
		return nil, nil, "", err
	}
	ctx, prep, err = startUp(e, watchSignalsOf(e), startSpec{db: *f.db, policy: *f.policy,
		notice: fmt.Sprintf("browser-agent %s: no --policy: serving the embedded demo site in-process; the browser can reach only it", cmd)})
	if err != nil {
		return nil, nil, "", err
	}
	return ctx, prep, addr, nil
}

// stderrLogf writes metadata-only log lines to stderr, one printable line each.
func stderrLogf(e *env) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintln(e.stderr, printable(fmt.Sprintf(format, args...))) }
}

// httpListenAddr checks an --http address: loopback when no host is given, and a listener
// beyond loopback only with a bearer token of at least 16 characters.
func httpListenAddr(addr, token string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageError("--http %q: want HOST:PORT, e.g. 127.0.0.1:8765", addr)
	}
	if host == "" {
		addr = net.JoinHostPort("127.0.0.1", port) // loopback unless asked otherwise
	}
	if !mcpserver.IsLoopback(addr) && len(token) < 16 {
		return "", usageError("--http %s listens beyond loopback: set $%s to a bearer token of at least 16 characters", addr, EnvMCPToken)
	}
	return addr, nil
}

// serveMCPHTTP serves an MCP handler at MCPPath on addr until ctx is done, with the bearer token
// of $EnvMCPToken and the listener's own origins.
func serveMCPHTTP(ctx context.Context, e *env, cmd, addr, auditPath string, handler func(mcpserver.HTTPOptions) http.Handler) error {
	token := os.Getenv(EnvMCPToken)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, handler(mcpserver.HTTPOptions{Token: token, Origins: mcpserver.LocalOrigins(ln.Addr())}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	auth := "no token"
	if token != "" {
		auth = "bearer token from $" + EnvMCPToken
	}
	fmt.Fprintf(e.stderr, "browser-agent %s: serving MCP (Streamable HTTP) at http://%s%s, %s; audit in %s\n", cmd, ln.Addr(), MCPPath, auth, auditPath)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stdioTransport is MCP over the command's stdin and stdout, announced on stderr: which command
// serves, and where its audit is (mcp and guard).
func stdioTransport(e *env, cmd, auditPath string) *mcp.IOTransport {
	fmt.Fprintf(e.stderr, "browser-agent %s: serving MCP on stdio; audit in %s\n", cmd, auditPath)
	in, _ := e.stdin.(io.ReadCloser)
	if in == nil {
		in = io.NopCloser(e.stdin)
	}
	return &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{e.stdout}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// launchMCP is the browser of one MCP session: the guarded browser of "run". Tests replace
// launchBrowser, and this follows.
func launchMCP(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
	return launchBrowser(ctx, pol)
}
