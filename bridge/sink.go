package bridge

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// sink is the proxy the browser is launched against when no egress proxy is given. Every request
// the browser sends on its own (one that escaped the route: a worker's WebSocket, a prerender, a
// browser-internal fetch) reaches it instead of the network, is recorded and refused.
type sink struct {
	ln  net.Listener
	srv *http.Server
}

func newSink(record func(RequestDecision), logf func(string, ...any)) (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{ln: ln}
	s.srv = &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			target := "https://" + r.Host // a CONNECT names its host and port only
			if r.Method != http.MethodConnect && r.URL != nil && r.URL.Host != "" {
				target = r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
			}
			record(RequestDecision{Time: time.Now(), Entry: policy.EntryOf(policy.LayerBrowser, r.Method, target, policy.Decision{Verdict: policy.Deny, Reason: ReasonOutsideRoute}), ResourceType: "other", Frame: FrameNone})
			w.Header().Set("Connection", "close")
			http.Error(w, "refused by browser-agent", http.StatusForbidden)
		}),
		ErrorLog: log.New(&logWriter{logf: logf, prefix: "sink: "}, "", 0),
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) addr() string { return s.ln.Addr().String() }

func (s *sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return s.srv.Close()
	}
	return err
}
