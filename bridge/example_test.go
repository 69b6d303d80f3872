package bridge_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/policy"
)

func ExampleSession_Open() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<title>Records</title><h1>SYN-0001</h1><p style="display:none">hidden</p>
<a href="/records/2">Next</a> <a href="/records/2/delete">Delete</a>`)
	}))
	defer site.Close()
	pol, err := policy.Parse([]byte("version: 1\nsites:\n  - origin: "+site.URL+"\n    read: [/, \"/records/{id}\"]\n"), "example")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := bridge.Launch(ctx, pol) // a driver and a dedicated Chromium; Close stops both
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	p, err := s.Open(ctx, site.URL+"/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Title)
	fmt.Println(p.Text)
	links, err := s.Links(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range links {
		fmt.Println(l.N, l.Text, l.Allowed, l.Reason)
	}
	_, err = s.Open(ctx, site.URL+"/records/2/delete")
	if d, ok := bridge.IsDenied(err); ok {
		fmt.Println("hop", d.Hop, "denied:", d.Decision.Reason)
	}
	// Output:
	// Records
	// SYN-0001
	//
	// Next Delete
	// 1 Next true allowed read route
	// 2 Delete false write word in url
	// hop 0 denied: write word in url
}
