package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

func ExampleStart() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "record 42")
	}))
	defer site.Close()
	pol, err := policy.Parse([]byte("version: 1\nsites:\n  - origin: "+site.URL+"\n    read: [\"/records/{id}?session={s}\"]\n"), "example.yaml")
	if err != nil {
		panic(err)
	}

	var (
		mu        sync.Mutex
		decisions []proxy.Decision
	)
	p, err := proxy.Start(context.Background(), pol, proxy.WithDecisionHook(func(d proxy.Decision) {
		mu.Lock()
		defer mu.Unlock()
		decisions = append(decisions, d)
	}))
	if err != nil {
		panic(err)
	}
	// The bridge launches Chromium with p.ChromiumArgs() and bridge.WithProxy(p.Server(), user, pass).

	c := p.Client()
	resp, err := c.Get(site.URL + "/records/42?session=abc")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	_, err = c.Post(site.URL+"/records/42", "text/plain", nil)
	var denied *proxy.DeniedError
	if errors.As(err, &denied) {
		fmt.Println(denied.Status, denied.Reason)
	}

	p.Close() // returns after every decision was recorded
	for _, d := range decisions {
		fmt.Println(d.Layer, d.Method, d.Path, d.Verdict, d.Reason)
	}
	// Output:
	// 200 record 42
	// 403 write method
	// proxy GET /records/42 allow allowed read route
	// proxy POST /records/42 deny write method
}
