package proxy

import (
	"context"
	"net"
	"sync"
)

// lifecycle is whether the proxy is open, the requests in flight and the hijacked tunnels, under
// one lock: a request enters and a tunnel is tracked only while the proxy is open, so that Close,
// which marks it closed under the same lock, closes every tunnel and then waits for every request.
type lifecycle struct {
	mu       sync.Mutex
	closed   bool
	ctx      context.Context // done once closed: each request's context ends with it
	end      context.CancelFunc
	tunnels  map[net.Conn]struct{}
	inflight sync.WaitGroup
}

func newLifecycle() *lifecycle {
	l := &lifecycle{tunnels: map[net.Conn]struct{}{}}
	l.ctx, l.end = context.WithCancel(context.Background())
	return l
}

// enter counts a request in flight; false once the proxy is closed. leave ends it.
func (l *lifecycle) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.inflight.Add(1)
	return true
}

func (l *lifecycle) leave() { l.inflight.Done() }

// track keeps conns to be closed by close; false (nothing kept) once the proxy is closed.
func (l *lifecycle) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	for _, c := range conns {
		l.tunnels[c] = struct{}{}
	}
	return true
}

func (l *lifecycle) untrack(conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		delete(l.tunnels, c)
	}
}

// close marks the proxy closed, ends ctx, closes every tracked tunnel; false when it already was.
func (l *lifecycle) close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.closed = true
	l.end()
	for c := range l.tunnels {
		c.Close()
	}
	return true
}

// wait returns when every request that entered has left.
func (l *lifecycle) wait() { l.inflight.Wait() }

// acquire takes one of the WithMaxConns upstream slots (a forwarded request or a tunnel); false
// when all are taken. release gives it back.
func (p *Proxy) acquire() bool {
	select {
	case p.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (p *Proxy) release() { <-p.sem }
