// Command wiki serves the example wiki (examples/wiki) on 127.0.0.1:8082, the origin its
// policy.yaml names.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/browser-agent/browser-agent/examples/wiki"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "address to listen on (loopback)")
	flag.Parse()
	fmt.Printf("example wiki at http://%s\n", *addr)
	log.Fatal(http.ListenAndServe(*addr, wiki.Handler()))
}
