package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/web"
)

// DefaultServeAddr is where "browser-agent serve" listens without --addr.
const DefaultServeAddr = "127.0.0.1:8080"

// listFlag is a flag that may be given many times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveContext is the context "serve" runs under: until SIGINT or SIGTERM. Tests replace it.
var serveContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// serveWarm keeps one driver up and the next run's browser started in advance. Tests that fake
// the browser turn it off.
var serveWarm = true

// serveListening is told the address "serve" listens on. Tests replace it.
var serveListening = func(addr string) {}

// serveCmd is "browser-agent serve [flags]": the live demo page, its API and the public-run limits.
func serveCmd(e *env, args []string) error {
	fs := newFlags(e, "serve", "[--addr 127.0.0.1:8080] [--policy FILE] [--model M] [--db FILE] [--trusted-proxy CIDR]... [--allow-origin ORIGIN]...")
	addr := fs.String("addr", DefaultServeAddr, "address to listen on")
	polFile := fs.String("policy", "", "policy file (default: start the embedded demo site and use its policy)")
	modelSpec := fs.String("model", modelOffline, "offline, script:FILE or openai:NAME (NAME must be approved by the policy)")
	dbFile := fs.String("db", "", "audit database, also the spend ledger (default $BROWSER_AGENT_DB, else "+audit.DefaultPath()+")")
	var proxies, origins listFlag
	fs.Var(&proxies, "trusted-proxy", "believe X-Forwarded-For from this proxy address or CIDR (repeatable)")
	fs.Var(&origins, "allow-origin", "let this origin call the API, e.g. chrome-extension://ID for the side panel (repeatable)")
	d := web.DefaultLimits()
	perVisitor := fs.Int("runs-per-hour", d.PerVisitor, "runs per visitor per hour")
	spend := fs.Float64("daily-spend", d.DailySpendUSD, "model spend per UTC day in USD; past it a recorded run plays (0: recorded-only mode)")
	recordedOnly := fs.Bool("recorded-only", false, "play recorded real runs only: no live run, no model call")
	queue := fs.Int("queue", d.Queue, "runs that may wait for the one running (others get 429)")
	runTimeout := fs.Duration("run-timeout", d.RunDeadline, "bounds one live run")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	var trusted []netip.Prefix
	for _, p := range proxies {
		pfx, err := web.ParseTrustedProxy(p)
		if err != nil {
			return usageError("--trusted-proxy: %v", err)
		}
		trusted = append(trusted, pfx)
	}
	for _, o := range origins {
		if err := checkOrigin(o); err != nil {
			return usageError("--allow-origin %q: %v", o, err)
		}
	}
	switch {
	case *perVisitor < 1:
		return usageError("--runs-per-hour must be at least 1")
	case !(*spend >= 0) || math.IsInf(*spend, 0):
		return usageError("--daily-spend must be an amount in USD, 0 or more (0: recorded-only mode)")
	case *queue < 0:
		return usageError("--queue must not be negative")
	case *runTimeout < time.Second:
		return usageError("--run-timeout must be at least 1s")
	}
	kind, arg, err := parseModelSpec(*modelSpec)
	if err != nil {
		return err
	}

	ctx, stop := serveContext()
	defer stop()

	prep, err := prepare(ctx, e, *dbFile, *polFile, kind, arg)
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol

	logf := func(format string, args ...any) { fmt.Fprintln(e.stderr, printable(fmt.Sprintf(format, args...))) }
	launch := func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return launchBrowser(ctx, pol)
	}
	warm := serveWarm && !(*recordedOnly || *spend == 0)
	if warm {
		// One Playwright driver for the life of the server; every run still gets its own Chromium
		// and egress proxy, started before it is needed (web.WithPrewarm).
		rt, err := bridge.NewRuntime()
		if err != nil {
			return err
		}
		defer rt.Close()
		launch = func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			g, err := guarded.LaunchOn(ctx, rt, pol)
			if err != nil {
				return nil, nil, err
			}
			return g, g, nil
		}
	}
	ws, err := web.New(pol,
		web.WithLauncher(launch),
		web.WithPrewarm(warm),
		web.WithModel(*modelSpec, func() (coordinator.Model, error) { return buildModel(kind, arg, pol) }),
		web.WithRecorder(auditRecorder{store}),
		web.WithLedger(store),
		web.WithVisitLog(store),
		web.WithRecordedOnly(*recordedOnly || *spend == 0),
		web.WithLimits(web.Limits{PerVisitor: *perVisitor, DailySpendUSD: *spend, Queue: *queue, RunDeadline: *runTimeout}),
		web.WithTrustedProxies(trusted...),
		web.WithAllowedOrigins(origins...),
		web.WithLogf(logf),
	)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		ws.Close()
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler:           ws,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          nil,
	}
	mode := "model " + *modelSpec
	if *recordedOnly || *spend == 0 {
		mode = "recorded-only mode: recorded runs play, no live run"
	}
	fmt.Fprintf(e.stderr, "serving the live demo on http://%s (%s, database %s)\n", ln.Addr(), mode, store.Path())
	serveListening(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		ws.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(e.stderr, "stopping")
	// Streams and runs end first: an event stream never goes idle by itself.
	ws.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// checkOrigin checks an --allow-origin value: scheme://host[:port], nothing else.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil {
		return err
	}
	if u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("give an origin: scheme://host[:port], e.g. chrome-extension://abcdefghijklmnopabcdefghijklmnop")
	}
	if strings.HasSuffix(o, "/") {
		return errors.New("an origin has no trailing slash")
	}
	return nil
}
