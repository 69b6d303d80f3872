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
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	runqueue "github.com/browser-agent/browser-agent/internal/queue"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/web"
)

// DefaultServeAddr is where "browser-agent serve" listens without --addr.
const DefaultServeAddr = "127.0.0.1:8080"

// listFlag is a flag that may be given many times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveContext is the context "serve" runs under: until the first SIGINT or SIGTERM (a second one
// exits at once). Tests replace it.
var serveContext = func() (context.Context, context.CancelFunc) {
	ctx, _, stop := watchSignals(os.Stderr)
	return ctx, stop
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
	polFile := policyFlag(fs, new(string))
	modelSpec := modelFlag(fs, new(string))
	dbFile := dbFlag(fs, new(string), "audit database, also the spend ledger and the run queue", true)
	var proxies, origins listFlag
	fs.Var(&proxies, "trusted-proxy", "believe X-Forwarded-For from this proxy address or CIDR (repeatable)")
	fs.Var(&origins, "allow-origin", "let this origin call the API, e.g. chrome-extension://ID for the side panel (repeatable)")
	d := web.DefaultLimits()
	perVisitor := fs.Int("runs-per-hour", d.PerVisitor, "runs per visitor per hour")
	spend := fs.Float64("daily-spend", d.DailySpendUSD, "model spend per UTC day in USD; past it a recorded run plays (0: recorded-only mode)")
	recordedOnly := fs.Bool("recorded-only", false, "play recorded real runs only: no live run, no model call")
	queue := fs.Int("queue", d.Queue, "runs that may wait for the one running (others get 429)")
	concurrent := fs.Int("concurrent", d.Concurrent, "live runs at a time")
	runTimeout := fs.Duration("run-timeout", d.RunDeadline, "bounds one live run")
	workers := fs.Int("workers", -1, "runs this process takes from the queue at a time (default --concurrent; 0: only \"browser-agent worker\" processes run them)")
	drain := fs.Duration("drain", DefaultDrain, "on SIGINT or SIGTERM, how long live runs may go on before they are interrupted")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
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
	case *concurrent < 1:
		return usageError("--concurrent must be at least 1")
	case *workers < -1:
		return usageError("--workers must not be negative")
	}
	if err := checkRunTimes(*runTimeout, *drain); err != nil {
		return err
	}
	if *workers == -1 {
		*workers = *concurrent
	}
	kind, arg, err := parseModelSpec(*modelSpec)
	if err != nil {
		return err
	}

	ctx, prep, err := startUp(e, serveContext, startSpec{db: *dbFile, policy: *polFile, kind: kind, arg: arg})
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol

	logf := func(format string, args ...any) { fmt.Fprintln(e.stderr, printable(fmt.Sprintf(format, args...))) }
	launch := func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
		return launchLogged(ctx, e, pol)
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
		launch = logLaunchErrors(e, debugEnabled(), func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			return launchOn(ctx, rt, pol)
		})
	}
	// The run queue, in the audit store's database: this process's workers run the runs it
	// enqueues with their live view; "browser-agent worker" processes may take them too.
	var ws *web.Server
	q, err := runqueue.Open(ctx, runqueue.Config{
		DB: storeDB(*dbFile, store), Workers: *workers, RunTimeout: *runTimeout,
		Exec: func(ctx context.Context, j runqueue.Job, attempt int) error { return ws.ExecJob(ctx, j, attempt) },
	})
	if err != nil {
		return err
	}
	defer q.Stop(context.Background())
	ws, err = web.New(pol,
		web.WithPresets(presets.All()...),
		web.WithFieldOrder(presets.FieldOrder...),
		web.WithRecordings(presets.Recorded()),
		web.WithQueue(q, store),
		web.WithLauncher(launch),
		web.WithPrewarm(warm),
		web.WithModel(*modelSpec, func() (coordinator.Model, error) { return buildModel(kind, arg, pol) }),
		web.WithRecorder(store),
		web.WithLedger(store),
		web.WithVisitLog(store.SQL()),
		web.WithRecordedOnly(*recordedOnly || *spend == 0),
		web.WithLimits(web.Limits{PerVisitor: *perVisitor, DailySpendUSD: *spend, Queue: *queue, Concurrent: *concurrent, RunDeadline: *runTimeout}),
		web.WithTrustedProxies(trusted...),
		web.WithAllowedOrigins(origins...),
		web.WithLogf(logf),
	)
	if err != nil {
		return err
	}
	if err := q.Start(context.WithoutCancel(ctx)); err != nil {
		ws.Close()
		return fmt.Errorf("queue: %w", err)
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
	fmt.Fprintf(e.stderr, "serving the live demo on http://%s (%s, database %s, run queue: %s, %d workers here)\n", ln.Addr(), mode, store.Path(), q.Backend(), *workers)
	serveListening(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		ws.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(e.stderr, "stopping: no new runs; live runs may finish for %s, then they are interrupted\n", *drain)
	// The listener closes at once; open connections are served until their streams end. A run
	// request that still arrives gets 503.
	hsDone := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), *drain+15*time.Second)
		defer cancel()
		hsDone <- hs.Shutdown(sctx)
	}()
	dctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	// The queue's workers here take no new job (one of another server's would be interrupted at
	// once) and finish theirs with the drain.
	qStopped := make(chan struct{})
	go func() { q.Stop(dctx); close(qStopped) }()
	ws.Shutdown(dctx) // every run has ended, its end recorded, and its streams got the result
	<-qStopped
	if err := <-hsDone; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	fmt.Fprintln(e.stderr, "stopped")
	return nil
}

// DefaultDrain is how long "serve" lets live runs go on after SIGINT or SIGTERM.
const DefaultDrain = 20 * time.Second

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
