// Command demo-site runs the synthetic records site alone.
//
// It serves the public site on --addr and the admin API (mutations, request log, reset, record
// JSON) on --admin, both on loopback, until SIGINT or SIGTERM. With --print-policy it prints the
// default policy for the --addr origin and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	demosite "github.com/browser-agent/browser-agent/demo-site"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "demo-site:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-site", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "loopback address of the public site")
	admin := fs.String("admin", "127.0.0.1:8082", "loopback address of the admin API")
	seed := fs.Uint64("seed", 1, "seed of the synthetic data")
	records := fs.Int("records", demosite.DefaultRecords, "number of records")
	printPolicy := fs.Bool("print-policy", false, "print the default policy for --addr and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	if *printPolicy {
		_, port, err := net.SplitHostPort(*addr)
		if err != nil {
			return fmt.Errorf("--addr %q: %w", *addr, err)
		}
		if port == "0" {
			return errors.New("--print-policy needs a fixed port in --addr")
		}
		_, err = stdout.Write(demosite.PolicyYAML("http://" + *addr))
		return err
	}

	srv, err := demosite.Start(ctx, *addr, *admin, demosite.Options{Seed: *seed, Records: *records})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "demo-site: site  %s\n", srv.URL)
	fmt.Fprintf(stderr, "demo-site: admin %s\n", srv.AdminURL)
	<-ctx.Done()
	fmt.Fprintln(stderr, "demo-site: shutting down")
	return srv.Close()
}
