package demosite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server runs a Site's public handler and admin handler on two loopback listeners.
type Server struct {
	URL      string // public site origin, e.g. http://127.0.0.1:8081
	AdminURL string // admin API origin, e.g. http://127.0.0.1:8082
	Site     *Site

	public, admin *http.Server
	stop          func() bool // releases the context watch
	closeOnce     sync.Once
	closeErr      error
}

// shutdownGrace is how long Close waits for in-flight requests before dropping them.
const shutdownGrace = 2 * time.Second

// Start builds a Site from opts and serves it on addr, with the admin API on adminAddr. Both
// addresses must be loopback ("127.0.0.1:0" picks a free port; "" means that). The servers stop
// when ctx is done or Close is called.
func Start(ctx context.Context, addr, adminAddr string, opts Options) (*Server, error) {
	pub, err := listenLoopback(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("site listener: %w", err)
	}
	adm, err := listenLoopback(ctx, adminAddr)
	if err != nil {
		pub.Close()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	site := New(opts)
	s := &Server{
		URL:      "http://" + pub.Addr().String(),
		AdminURL: "http://" + adm.Addr().String(),
		Site:     site,
		public:   &http.Server{Handler: site.Handler(), ReadHeaderTimeout: 10 * time.Second},
		admin:    &http.Server{Handler: site.AdminHandler(), ReadHeaderTimeout: 10 * time.Second},
	}
	go s.public.Serve(pub)
	go s.admin.Serve(adm)
	s.stop = context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// Close stops both listeners, waiting briefly for in-flight requests. It is safe to call twice.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.stop != nil {
			s.stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		var errs []error
		for _, srv := range []*http.Server{s.public, s.admin} {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, err, srv.Close())
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// listenLoopback listens on addr after checking that its host is a loopback address.
func listenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("address %q is not loopback", addr)
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}
