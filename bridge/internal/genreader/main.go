package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run is the command on args; it returns the exit code (2: bad usage, 1: failed or not current).
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("genreader", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "fail when DST is not current instead of writing it")
	if fs.Parse(args) != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: genreader [-check] DST")
		return 2
	}
	if err := output(fs.Arg(0), readerjs.JS(), *check); err != nil {
		fmt.Fprintln(stderr, "genreader:", err)
		return 1
	}
	return 0
}

// output writes want to dst, or with check compares them.
func output(dst string, want []byte, check bool) error {
	if !check {
		return os.WriteFile(dst, want, 0o644)
	}
	have, err := os.ReadFile(dst)
	if err != nil {
		return err
	}
	if !bytes.Equal(have, want) {
		return fmt.Errorf("%s is not current with bridge/internal/readerjs: run go generate ./bridge (or make build)", dst)
	}
	return nil
}
