package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/internal/queue"
)

// DefaultQueueUIAddr is where "browser-agent queue-ui" listens without --addr.
const DefaultQueueUIAddr = "127.0.0.1:8091"

// queueUICmd is "browser-agent queue-ui [--db DB] [--addr 127.0.0.1:8091]": River UI over the run
// queue, on loopback only (it can cancel, retry and delete jobs), until SIGINT or SIGTERM.
func queueUICmd(e *env, args []string) error {
	fs := newFlags(e, "queue-ui", "[--db FILE|postgres://...] [--addr 127.0.0.1:8091]")
	db := dbFlag(fs, new(string), "the database of the queue", true)
	addr := fs.String("addr", DefaultQueueUIAddr, "loopback address to listen on")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return usageError("--addr %q: River UI can cancel, retry and delete jobs: give a loopback address (reach it from elsewhere through an SSH tunnel)", *addr)
	}
	dsn := *db
	if dsn == "" {
		dsn = audit.DefaultPath()
	}
	ctx, _, stop := watchSignals(e.stderr)
	defer stop()
	if !queue.IsPostgres(dsn) {
		// The audit store creates the file and its schema; the queue adds River's tables.
		store, err := openStoreBounded(ctx, e, dsn)
		if err != nil {
			return err
		}
		store.Close()
	}
	q, err := queue.Open(ctx, queue.Config{DB: dsn})
	if err != nil {
		return err
	}
	defer q.Stop(context.Background())
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := q.UI("", logger)
	if err != nil {
		return fmt.Errorf("river ui: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return fmt.Errorf("river ui: %w", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(e.stderr, "River UI of the run queue in %s (%s) on http://%s/\n", audit.RedactURL(dsn), q.Backend(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
