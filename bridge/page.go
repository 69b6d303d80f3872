package bridge

import (
	"maps"
	"strings"
	"sync"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

// The page the session opened last and its text, served chunk by chunk: pageState is what the
// session holds about it, pageCache holds it under its own lock (the route handlers and the page
// operations share it), chunkOf cuts its text into the windows Read returns.

// pageState is what the session holds about the page it opened last.
type pageState struct {
	url       string
	status    int
	hops      []Hop
	truncated bool
	withheld  bool   // a credential field was found: nothing from the page is returned
	field     string // the field that withheld it (credentialField's sentence)
	title     string
	heading   string // the first visible h1 of the main frame
	text      string
	reads     int // the reads of the page so far (snapshots): each proves four times the text of the last
	links     []Link
	fields    []Field
	unread    int    // text runs not proven visible (snapshot.withheld)
	unproven  string // why
	vis       *visState
	// invisible counts the code points withheld as drawing nothing (stripInvisible): those of the
	// text read so far, and those of the latest links, fields, title and heading; invisibleAcct
	// is the text's share in the account's unit (characters other than white space).
	invisibleText, invisibleRest, invisibleAcct int
	// account is what became of the page's text so far (the last read's, which covers every text
	// node, less what the text cap cut: capCut, and the invisible characters); list the withheld
	// nodes in debug mode.
	account Account
	capCut  int
	list    []WithheldRun
	// changes: the last read's snapshot.changes (a read ahead's baseline, ahead.go).
	changes map[string]int
	// live: a read ahead of this page was dropped because the page changed since its proof (a
	// clock, a carousel): it is not read ahead again, the work would be lost each time.
	live bool
}

// whole reports whether the page's text is complete: no run is left for a later read.
func (st *pageState) whole() bool { return st.vis == nil || st.vis.done }

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

// replace puts next, a copy of st with more read (a read ahead), in st's place.
func (c *pageCache) replace(st, next *pageState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*st = *next
}

// withhold marks st withheld because of field and drops what was read of it. It returns the
// error every later use of the page gets.
func (c *pageCache) withhold(st *pageState, field string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !st.withheld {
		st.withheld, st.field = true, field
	}
	st.title, st.heading, st.text, st.links, st.fields = "", "", "", nil, nil
	return &CredentialError{URL: st.url, Field: st.field}
}

// credentialErr is the error a use of the withheld page st gets.
func (c *pageCache) credentialErr(st *pageState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &CredentialError{URL: st.url, Field: st.field}
}

// add appends what a read of st's page proved visible: the text after what earlier reads gave
// (offsets already given stay valid), joined to it as the page joins them, and the links, fields
// and headings of the page as far as it has been read (each read sees every run proven visible so
// far).
func (c *pageCache) add(st *pageState, snap *snapshot, textCap int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.withheld {
		return
	}
	if snap.stale {
		// The read laid nothing out (its phase ran out of time first): its state only.
		st.vis = snap.vis
		return
	}
	pre := nonSpace(snap.text)
	text, rest := stripInvisible(snap)
	st.invisibleText += text
	st.invisibleAcct += pre - nonSpace(snap.text)
	if rest > 0 || snap.links != nil || snap.fields != nil {
		st.invisibleRest = rest
	}
	before := nonSpace(st.text) + nonSpace(snap.text)
	switch {
	case st.text == "":
		st.text = snap.text
	case snap.text != "":
		// A paragraph whose runs two reads decided goes on as the page has it; a new block
		// after a blank line.
		join := "\n\n"
		if snap.join != nil {
			join = *snap.join
		}
		st.text = capText(st.text+join+snap.text, textCap)
	}
	st.capCut += snap.cut + before - nonSpace(st.text)
	st.account = snap.account
	st.account.Withheld = maps.Clone(snap.account.Withheld)
	st.account.Handed -= st.capCut + st.invisibleAcct
	st.account.Withhold(readerjs.WhyCap, st.capCut)
	st.account.Withhold(whyInvisible, st.invisibleAcct)
	st.list = snap.list
	st.title = firstNonEmpty(st.title, snap.title)
	st.heading = firstNonEmpty(st.heading, snap.heading)
	if snap.links != nil || st.links == nil {
		st.links = snap.links
	}
	if snap.fields != nil || st.fields == nil {
		st.fields = snap.fields
	}
	// Each read counts every run withheld so far (an earlier read's stay withheld, with their
	// reason): the last read's count is the page's.
	st.unread = snap.withheld
	if snap.unproven != "" {
		st.unproven = snap.unproven
	}
	st.vis = snap.vis
	st.changes = snap.changes
	if len(st.text) >= textCap {
		st.vis = &visState{done: true} // the cap is reached: nothing more is read
		st.account.Withhold(readerjs.WhyCap, st.account.Pending)
		st.account.Pending = 0
	}
}

// chunkOf cuts text into a window of at most size bytes starting at offset, ending on a rune
// boundary and, when one is near, after a line break or space.
func chunkOf(text string, offset, size int) Chunk {
	for offset < len(text) && offset > 0 && !runeStart(text[offset]) {
		offset++
	}
	if offset >= len(text) {
		return Chunk{Offset: offset, Next: len(text)}
	}
	end := offset + size
	if end >= len(text) {
		return Chunk{Text: text[offset:], Offset: offset, Next: len(text)}
	}
	for end > offset && !runeStart(text[end]) {
		end--
	}
	if cut := strings.LastIndexAny(text[offset:end], "\n "); cut > size/2 {
		end = offset + cut + 1
	}
	return Chunk{Text: text[offset:end], Offset: offset, Next: end, More: true}
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
