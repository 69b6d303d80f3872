package bridge

import "sync"

// The router's state that the route handlers and the page operations share, each under its own
// lock: the navigation Open is making (navState) and the request decisions (decisionLog); the page
// opened last is the Session's pageCache (page.go). None of these locks is taken while another of
// them is held.

// navState is the one main-frame navigation the bridge is opening and the sub-frame navigations
// since the last Open.
type navState struct {
	mu        sync.Mutex
	pending   *pendingNav
	frameNavs int
}

type pendingNav struct {
	url  string
	resp *fetched
	used bool
}

// begin makes f the one main-frame navigation allowed, and starts the sub-frame count again.
func (n *navState) begin(f *fetched) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = &pendingNav{url: f.url, resp: f}
	n.frameNavs = 0
}

// end forgets the pending navigation; used reports whether the browser took it.
func (n *navState) end() (used bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	used = n.pending != nil && n.pending.used
	n.pending = nil
	return used
}

// take hands the pending navigation out once, to a main-frame GET of its URL (ok), marking it used.
func (n *navState) take(raw string, get bool) (*pendingNav, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.pending
	ok := p != nil && !p.used && get && sameURL(raw, p.url)
	if ok {
		p.used = true
	}
	return p, ok
}

// frameNav counts a sub-frame navigation; over reports whether it goes past limit.
func (n *navState) frameNav(limit int) (over bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.frameNavs++
	return n.frameNavs > limit
}

// maxDecisions bounds the session's in-memory decision log.
const maxDecisions = 4096

// decisionLog is the session's request decisions, oldest first: at most maxDecisions, the older
// half dropped when full.
type decisionLog struct {
	mu   sync.Mutex
	list []RequestDecision
}

func (l *decisionLog) add(d RequestDecision) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) >= maxDecisions {
		l.list = append(l.list[:0], l.list[len(l.list)-maxDecisions/2:]...)
	}
	l.list = append(l.list, d)
}

// all is a copy of the log.
func (l *decisionLog) all() []RequestDecision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RequestDecision(nil), l.list...)
}
