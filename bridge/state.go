package bridge

import "sync"

// The Session's state that its route handlers and its page operations share, one type per job,
// each under its own lock: the navigation Open is making (nav), the page it opened last (pages)
// and the request decisions (log). None of these locks is taken while another of them is held.

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

// pageCache is the page the session opened last, nil when none (or forgotten).
type pageCache struct {
	mu  sync.Mutex
	cur *pageState
}

func (c *pageCache) set(st *pageState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur = st
}

func (c *pageCache) get() *pageState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// withhold marks st withheld and drops what was read of it.
func (c *pageCache) withhold(st *pageState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.withheld = true
	st.title, st.heading, st.text, st.links, st.fields = "", "", "", nil, nil
}

// add appends what a read of st's page proved visible: the text after what earlier reads gave
// (offsets already given stay valid), and the links, fields and headings of the page as far as
// it has been read (each read sees every run proven visible so far).
func (c *pageCache) add(st *pageState, snap *snapshot, textCap int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.withheld {
		return
	}
	switch {
	case st.text == "":
		st.text = snap.text
	case snap.text != "":
		st.text = capText(st.text+"\n\n"+snap.text, textCap)
	}
	st.title = firstNonEmpty(st.title, snap.title)
	st.heading = firstNonEmpty(st.heading, snap.heading)
	if snap.links != nil || st.links == nil {
		st.links = snap.links
	}
	if snap.fields != nil || st.fields == nil {
		st.fields = snap.fields
	}
	st.unread += snap.withheld
	if snap.unproven != "" {
		st.unproven = snap.unproven
	}
	st.vis = snap.vis
	if len(st.text) >= textCap {
		st.vis = &visState{done: true} // the cap is reached: nothing more is read
	}
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
