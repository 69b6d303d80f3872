package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

func main() {
	check := flag.Bool("check", false, "fail when DST is not current instead of writing it")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: genreader [-check] DST")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *check); err != nil {
		fmt.Fprintln(os.Stderr, "genreader:", err)
		os.Exit(1)
	}
}

func run(dst string, check bool) error {
	want := readerjs.JS()
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
