package bridge

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
	"golang.org/x/sync/errgroup"
)

//go:generate go run ./internal/genreader js/reader/01_consts.js

// resolveInFlight bounds the DOM.resolveNode calls in flight at once for the elements a proof
// is asked about (WithNodeTexts).
const resolveInFlight = 16

// readerFiles is the reader's function, one file per job (js/reader/00_frame.js says how they fit).
//
//go:embed js/reader/*.js
var readerFiles embed.FS

// readerJS is the reader: the files of js/reader joined in name order.
var readerJS = joinJS(readerFiles, "js/reader")

// joinJS joins the .js files of dir in fsys in name order.
func joinJS(fsys embed.FS, dir string) string {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := fsys.ReadFile(dir + "/" + e.Name())
		if err != nil {
			panic(err)
		}
		b.Write(data)
	}
	return b.String()
}

// CDPSession is one DevTools session, a page's or an out-of-process frame's: what the reader
// sends its commands on. playwright-go's CDPSession is one; mcpguard adapts its own
// DevTools connection to it (VisibleText).
type CDPSession interface {
	Send(method string, params map[string]any) (any, error)
	Detach() error
}

var _ CDPSession = playwright.CDPSession(nil)

// cdpCall sends one CDP command and decodes its result into out. CDPSession.Send cannot be
// cancelled, so a hung renderer costs a goroutine until the session closes, not the caller.
func cdpCall(ctx context.Context, sess CDPSession, method string, params map[string]any, out any) error {
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := sess.Send(method, params)
		ch <- result{v, err}
	}()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if out == nil {
			return nil
		}
		b, err := json.Marshal(r.v)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: decode: %w", method, err)
		}
		return nil
	}
}

// cdpNode is a DOM.Node as DOM.getDocument(pierce) returns it: closed shadow roots and
// same-process frame documents included.
type cdpNode struct {
	NodeType        int        `json:"nodeType"`
	LocalName       string     `json:"localName"`
	NodeValue       string     `json:"nodeValue"`
	BackendNodeID   int        `json:"backendNodeId"`
	Attributes      []string   `json:"attributes"`
	Children        []*cdpNode `json:"children"`
	ShadowRoots     []*cdpNode `json:"shadowRoots"`
	ShadowRootType  string     `json:"shadowRootType"`
	FrameID         string     `json:"frameId"`
	ContentDocument *cdpNode   `json:"contentDocument"`
}

// attr returns an attribute's value. The value attribute of a control is dropped at decode time
// (see scrub) and so never returned.
func (n *cdpNode) attr(name string) string {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if strings.EqualFold(n.Attributes[i], name) {
			return n.Attributes[i+1]
		}
	}
	return ""
}

func (n *cdpNode) hasAttr(name string) bool {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if strings.EqualFold(n.Attributes[i], name) {
			return true
		}
	}
	return false
}

// scrub drops every value attribute from the tree: a field's value is never read.
func (n *cdpNode) scrub() {
	if n == nil {
		return
	}
	kept := n.Attributes[:0]
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if strings.EqualFold(n.Attributes[i], "value") {
			continue
		}
		kept = append(kept, n.Attributes[i], n.Attributes[i+1])
	}
	n.Attributes = kept
	for _, c := range n.Children {
		c.scrub()
	}
	for _, c := range n.ShadowRoots {
		c.scrub()
	}
	n.ContentDocument.scrub()
}

// target is one CDP session: the page's, or an out-of-process iframe's.
type target struct {
	sess   CDPSession
	kept   bool   // the page's own session, kept across views (pageSession)
	root   string // frame id at the root of the session
	frames []frameEntry
	doc    *cdpNode
}

type frameEntry struct {
	id, parent, url string
}

// pageReader reads the page over CDP: it maps the page's frames, runs the reader (js/reader) in an
// isolated world per frame, proves by pixels which text runs are visible (visibility.go), checks
// for credential fields around each read, and assembles the frames' text, links and fields.
type pageReader struct {
	cfg   *config
	pol   *policy.Policy // the links' decisions
	bctx  playwright.BrowserContext
	page  playwright.Page
	world string // name of the reader's isolated world
	watch *watcher
	act   *activity
	// sess is the page's own CDP session, opened by the first view and kept for the next ones
	// (pageSession); released is closed when the release of the last view that used it is done.
	// Views are made under the session's operation lock only.
	sess     playwright.CDPSession
	released chan struct{}
	inUse    bool // a view holds sess (a second view at the same time opens its own session)
}

// pageSession returns the page's CDP session, opened once and kept: opening one is a round trip
// through the driver and the browser (about 8 ms here, and as much again to detach it), and a
// read makes one view, each re-check before Links, Fields and Screenshot another. The page
// target's session outlives its navigations; what a view leaves in it is released when the view
// closes (attached.close).
func (pr *pageReader) pageSession() (playwright.CDPSession, error) {
	if pr.released != nil {
		<-pr.released // the last view's release first: the session's calls stay in order
		pr.released = nil
	}
	if pr.sess != nil {
		return pr.sess, nil
	}
	s, err := pr.bctx.NewCDPSession(pr.page)
	if err != nil {
		return nil, err
	}
	pr.sess = s
	return s, nil
}

// dropPageSession detaches the kept session after a call on it failed: the next view opens a
// new one.
func (pr *pageReader) dropPageSession(s CDPSession) {
	if pr.sess == s {
		pr.sess = nil
	}
	detach(s)
}

// attach takes the page's kept CDP session (or, while another view holds it, opens one of its
// own) and opens sessions for every out-of-process iframe (site isolation puts a cross-site
// iframe in its own renderer; it has its own session). It loads each session's frame tree and
// its DOM, closed shadow roots and same-process frames included. Given the targets
// of an earlier attach (prev, with the frames already tried), it reuses their sessions, opens
// sessions only for frames it has not tried, and loads every tree and DOM afresh.
func (pr *pageReader) attach(ctx context.Context, prev *attached) (*attached, error) {
	a := &attached{tried: map[playwright.Frame]bool{}, pr: pr}
	if prev != nil {
		a.targets, a.tried = prev.targets, prev.tried
		prev.targets = nil // owned by a now
	} else {
		var main playwright.CDPSession
		var err error
		kept := !pr.inUse
		if kept {
			main, err = pr.pageSession()
		} else {
			main, err = pr.bctx.NewCDPSession(pr.page)
		}
		if err != nil {
			return a, fmt.Errorf("page session: %w", err)
		}
		pr.inUse = pr.inUse || kept
		a.targets = append(a.targets, &target{sess: main, kept: kept})
	}
	mf := pr.page.MainFrame()
	for _, f := range pr.page.Frames() {
		if f == mf || a.tried[f] {
			continue
		}
		a.tried[f] = true
		fs, err := pr.bctx.NewCDPSession(f)
		if err != nil {
			continue // a same-process frame (it is in its parent's session) or a detached one
		}
		a.targets = append(a.targets, &target{sess: fs})
	}
	return a, a.load(ctx)
}

// load loads each session's frame tree and its DOM, closed shadow roots and same-process frames
// included (values scrubbed). A session other than the page's that does not answer is left
// without frames.
func (a *attached) load(ctx context.Context) error {
	main := a.targets[0].sess
	for _, t := range a.targets {
		t.frames, t.root, t.doc = nil, "", nil
		var tree struct {
			FrameTree json.RawMessage `json:"frameTree"`
		}
		if err := cdpCall(ctx, t.sess, "Page.getFrameTree", nil, &tree); err != nil {
			if t.sess == main {
				a.failed = true
				return err
			}
			continue
		}
		t.frames = flattenFrameTree(tree.FrameTree, nil)
		if len(t.frames) > 0 {
			t.root = t.frames[0].id
		}
		var doc struct {
			Root *cdpNode `json:"root"`
		}
		if err := cdpCall(ctx, t.sess, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true}, &doc); err != nil {
			if t.sess == main {
				a.failed = true
				return err
			}
			continue
		}
		doc.Root.scrub()
		t.doc = doc.Root
	}
	return nil
}

// attached is the CDP sessions of one page and the frames attach has tried to open a session for.
type attached struct {
	targets []*target
	tried   map[playwright.Frame]bool
	pr      *pageReader
	failed  bool // a call on the page's kept session failed: it is dropped, not kept
}

// close ends the frames' sessions and releases the page's kept one: its DOM agent, which
// DOM.getDocument enabled and which would otherwise send an event for every change the page
// makes to the tree until the next view, is disabled (the next getDocument enables it again).
// The release is not waited for here: the next pageSession waits for it, so it overlaps with
// whatever the caller does in between. A kept session that failed, or does not answer, is
// detached.
func (a *attached) close() {
	if a == nil {
		return
	}
	for _, t := range a.targets {
		if !t.kept {
			detach(t.sess)
			continue
		}
		pr, sess, failed := a.pr, t.sess, a.failed
		done := make(chan struct{})
		pr.released, pr.inUse = done, false
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), detachWait)
			defer cancel()
			if failed || cdpCall(ctx, sess, "DOM.disable", nil, nil) != nil {
				pr.dropPageSession(sess)
			}
		}()
	}
	a.targets = nil
}

// detachWait bounds the wait for one CDP session's Detach.
const detachWait = 2 * time.Second

// detach ends a CDP session without waiting more than detachWait. Detach takes no context, and a
// renderer that never yields (a page in an endless script loop) never answers it: waiting would
// hang Open or Read past every deadline. A Detach left running ends when the browser closes.
func detach(sess CDPSession) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sess.Detach()
	}()
	t := time.NewTimer(detachWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func flattenFrameTree(raw json.RawMessage, out []frameEntry) []frameEntry {
	var n struct {
		Frame struct {
			ID       string `json:"id"`
			ParentID string `json:"parentId"`
			URL      string `json:"url"`
		} `json:"frame"`
		ChildFrames []json.RawMessage `json:"childFrames"`
	}
	if json.Unmarshal(raw, &n) != nil || n.Frame.ID == "" {
		return out
	}
	out = append(out, frameEntry{id: n.Frame.ID, parent: n.Frame.ParentID, url: n.Frame.URL})
	for _, c := range n.ChildFrames {
		out = flattenFrameTree(c, out)
	}
	return out
}

// pageView is the page's frames as the CDP sessions see them: which session owns a frame, its
// child frames, and the closed shadow roots in it.
type pageView struct {
	att      *attached
	targets  []*target
	mainID   string
	mainURL  string
	owner    map[string]*target
	children map[string][]string
	closed   map[string][]closedRoot
	frames   []string // every frame, main first
	worlds   map[string]int
	docs     map[string]docRef // each frame's document node, for its main world (watch.go)
}

type closedRoot struct {
	t       *target
	backend int
}

// view attaches to the page (reusing prev's sessions when given) and maps its frames.
func (pr *pageReader) view(ctx context.Context, prev *pageView) (*pageView, error) {
	defer pr.cfg.took("view", time.Now())
	var pa *attached
	if prev != nil {
		pa = prev.att
	}
	att, err := pr.attach(ctx, pa)
	if err != nil {
		return &pageView{att: att}, err
	}
	return mapView(att), nil
}

// mapView maps the frames of loaded sessions: which session owns a frame, its child frames, the
// closed shadow roots and each frame's document.
func mapView(att *attached) *pageView {
	targets := att.targets
	v := &pageView{att: att, targets: targets, mainID: targets[0].root, owner: map[string]*target{},
		children: map[string][]string{}, closed: map[string][]closedRoot{}, docs: map[string]docRef{}}
	if len(targets[0].frames) > 0 {
		v.mainURL = targets[0].frames[0].url
	}
	// Which session owns a frame: the session rooted at it, else the deepest session listing it.
	rooted := map[string]bool{}
	listed := map[string]bool{}
	for _, t := range targets {
		for _, f := range t.frames {
			if f.id == t.root {
				v.owner[f.id], rooted[f.id] = t, true
			} else if !rooted[f.id] {
				v.owner[f.id] = t
			}
			if !listed[f.id] {
				v.frames = append(v.frames, f.id)
				if f.parent != "" {
					v.children[f.parent] = append(v.children[f.parent], f.id)
				}
			}
			listed[f.id] = true
		}
	}
	// Closed shadow roots per frame, found in the DOM of the session that renders the frame.
	for _, t := range targets {
		if t.doc == nil {
			continue
		}
		var walk func(n *cdpNode, frame string)
		walk = func(n *cdpNode, frame string) {
			for _, sr := range n.ShadowRoots {
				if sr.ShadowRootType == "closed" {
					v.closed[frame] = append(v.closed[frame], closedRoot{t, sr.BackendNodeID})
				}
				walk(sr, frame)
			}
			for _, c := range n.Children {
				walk(c, frame)
			}
			if n.ContentDocument != nil && n.FrameID != "" {
				if _, ok := v.docs[n.FrameID]; !ok && n.ContentDocument.BackendNodeID != 0 {
					v.docs[n.FrameID] = docRef{t, n.ContentDocument.BackendNodeID}
				}
				walk(n.ContentDocument, n.FrameID)
			}
		}
		if t.root != "" && t.doc.BackendNodeID != 0 {
			v.docs[t.root] = docRef{t, t.doc.BackendNodeID} // the session rooted at a frame renders it
		}
		walk(t.doc, t.root)
	}
	return v
}

// close ends the view's CDP sessions (the page's kept one is released, not ended).
func (v *pageView) close() {
	if v != nil {
		v.att.close()
	}
}

// domCredential runs the DOM-only check (findCredential) on every session's tree.
func (v *pageView) domCredential() string {
	for _, t := range v.targets {
		if t.doc == nil {
			continue
		}
		if why := findCredential(t.doc); why != "" {
			return why
		}
	}
	return ""
}

// readerGroup prefixes the object group of the handles one evaluation gives the reader. Each
// evaluation has a group of its own: the release of an evaluation whose context ended is still
// sent (cdpCall does not wait for it) and may reach Chromium after the next evaluation resolved
// its handles; with one shared group it released those too ("Could not find object with given id").
const readerGroup = "browser-agent-reader"

// release frees an object group without waiting for Chromium's answer (a round trip through the
// driver saved per evaluation that held handles): every group is one evaluation's own, so a
// release that arrives late frees nothing a later evaluation holds.
func release(sess CDPSession, group string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), detachWait)
		defer cancel()
		_ = cdpCall(ctx, sess, "Runtime.releaseObjectGroup", map[string]any{"objectGroup": group}, nil)
	}()
}

// evalSeq numbers the reader's evaluations (their object groups).
var evalSeq atomic.Uint64

// evalGroup is the object group of evaluation n.
func evalGroup(n uint64) string { return readerGroup + "-" + strconv.FormatUint(n, 10) }

// evalFrame runs the reader in frame's isolated world. mode "check" reports only the frame's
// editable elements; "read" reports them and, in the same synchronous evaluation, the frame's
// visible text, links and fields.
func (pr *pageReader) evalFrame(ctx context.Context, v *pageView, frame, mode string, extra map[string]any) (*rawRead, error) {
	if pr.cfg.phase != nil {
		defer pr.cfg.took("eval:"+mode, time.Now())
	}
	t := v.owner[frame]
	if t == nil {
		return nil, fmt.Errorf("frame %s: no session", frame)
	}
	var world struct {
		ID int `json:"executionContextId"`
	}
	// One isolated world per frame and view: the pixel phase evaluates in each frame many times.
	if id, ok := v.worlds[frame]; ok {
		world.ID = id
	} else {
		if err := cdpCall(ctx, t.sess, "Page.createIsolatedWorld", map[string]any{
			"frameId": frame, "worldName": pr.world, "grantUniveralAccess": false,
		}, &world); err != nil {
			return nil, err
		}
		if v.worlds == nil {
			v.worlds = map[string]int{}
		}
		v.worlds[frame] = world.ID
	}
	group := evalGroup(evalSeq.Add(1))
	// The group holds the handles resolved below and an exception's object, if any: released
	// then (a round trip). An evaluation that resolved none and returned by value (the paint and
	// scroll modes of most pages) made no object in it.
	held := true
	defer func() {
		if held {
			release(t.sess, group)
		}
	}()
	args := []map[string]any{nil}
	asked := false
	if ids, ok := extra["nodes"].([]int); ok && mode == readerjs.ModeRead && len(ids) > 0 {
		asked = true // resolve runs concurrently for them (below)
	}
	resolve := func(backend int) string {
		var r struct {
			Object struct {
				ObjectID string `json:"objectId"`
			} `json:"object"`
		}
		if cdpCall(ctx, t.sess, "DOM.resolveNode", map[string]any{
			"backendNodeId": backend, "executionContextId": world.ID, "objectGroup": group,
		}, &r) != nil {
			return ""
		}
		return r.Object.ObjectID
	}
	nClosed := 0
	for _, cr := range v.closed[frame] {
		if cr.t != t {
			continue
		}
		asked = true
		if id := resolve(cr.backend); id != "" {
			args = append(args, map[string]any{"objectId": id})
			nClosed++
		}
	}
	var frameIDs []string
	if mode == readerjs.ModeRead || mode == readerjs.ModeLayout {
		for _, c := range v.children[frame] {
			var fo struct {
				BackendNodeID int `json:"backendNodeId"`
			}
			if cdpCall(ctx, t.sess, "DOM.getFrameOwner", map[string]any{"frameId": c}, &fo) != nil || fo.BackendNodeID == 0 {
				continue
			}
			asked = true
			if id := resolve(fo.BackendNodeID); id != "" {
				args = append(args, map[string]any{"objectId": id})
				frameIDs = append(frameIDs, c)
			}
		}
	}
	// The elements a proof was asked about (WithNodeTexts), each in its place: one not
	// resolved is passed as null.
	nodeCount := 0
	if ids, ok := extra["nodes"].([]int); ok && mode == readerjs.ModeRead {
		// One round trip each, many in flight at once: a snapshot of a long page asks about
		// thousands of elements, and one after another they cost seconds of latency.
		objs := make([]string, len(ids))
		var g errgroup.Group
		g.SetLimit(resolveInFlight)
		for i, b := range ids {
			g.Go(func() error {
				objs[i] = resolve(b)
				return nil
			})
		}
		g.Wait()
		for _, id := range objs {
			a := map[string]any{"value": nil}
			if id != "" {
				a = map[string]any{"objectId": id}
			}
			args = append(args, a)
		}
		nodeCount = len(ids)
	}
	if pr.cfg.resolved != nil {
		pr.cfg.resolved(ctx, t.sess, group)
	}
	o := map[string]any{
		"mode": mode, "closedCount": nClosed, "frameIds": frameIDs, "textCap": pr.cfg.textCap,
		"linkCap": DefaultLinkCap, "fieldCap": DefaultFieldCap, "minFontPx": 6, "world": pr.world,
		"nodeCount": nodeCount,
	}
	for k, val := range extra {
		if k != "nodes" {
			o[k] = val
		}
	}
	args[0] = map[string]any{"value": o}
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := cdpCall(ctx, t.sess, "Runtime.callFunctionOn", map[string]any{
		"functionDeclaration": readerJS, "executionContextId": world.ID, "arguments": args,
		"returnByValue": true, "objectGroup": group,
	}, &res); err != nil {
		return nil, err
	}
	held = asked || res.ExceptionDetails != nil
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("reader: %s %s", res.ExceptionDetails.Text, firstLine(res.ExceptionDetails.Exception.Description))
	}
	var rr rawRead
	if err := json.Unmarshal(res.Result.Value, &rr); err != nil {
		return nil, fmt.Errorf("reader result: %w", err)
	}
	if mode == readerjs.ModeLayout || mode == readerjs.ModeScroll {
		rr.Layout = res.Result.Value
	}
	return &rr, nil
}

// newFrames says whether now holds a frame that was not in had.
func newFrames(had, now []string) bool {
	for _, f := range now {
		if !slices.Contains(had, f) {
			return true
		}
	}
	return false
}

// controlsCredential says why one frame's editable elements include a credential field, or "".
func controlsCredential(cs []control) string {
	for _, c := range cs {
		if why := credentialField(c); why != "" {
			return why
		}
	}
	return ""
}

// checkCredentials looks for a credential field in every frame of the page (main, same-process
// and out-of-process frames, open and closed shadow roots): the DOM check on every session's
// tree, and the reader's check, with styles and rendered names, in every frame. It returns why the
// page is withheld, or "". A frame that cannot be checked is an error for the main frame and a
// logged miss (the DOM check still covered it) for a child frame.
func (pr *pageReader) checkCredentials(ctx context.Context, v *pageView) (string, error) {
	if why := v.domCredential(); why != "" {
		return why, nil
	}
	for _, f := range v.frames {
		rr, err := pr.evalFrame(ctx, v, f, readerjs.ModeCheck, nil)
		if err != nil {
			if f == v.mainID {
				return "", err
			}
			pr.cfg.logf("bridge: frame not checked: %v", err)
			continue
		}
		if why := controlsCredential(rr.Controls); why != "" {
			return why, nil
		}
	}
	return "", nil
}

// snapshot is what the reader returns for a page, frames assembled.
type snapshot struct {
	title   string
	heading string
	text    string
	links   []Link
	fields  []Field
	// withheld counts the text runs not read because rendering did not prove them visible
	// (unproven says why), as opposed to runs proven hidden.
	withheld int
	unproven string
	// vis is what the pixel phases decided of the page so far; vis.done when its text is whole.
	vis     *visState
	decided int // runs the pixel phase decided
	// account is what became of every text node of the page by this read (served and new runs
	// both handed out); list, in debug mode, each withheld node.
	account Account
	list    []WithheldRun
	cut     int // characters the text cap cut from text (pageCache.add counts them withheld)
	// join goes between the text earlier reads gave and text, when text goes on a block an
	// earlier read's run began (nil: a blank line).
	join *string
	// stale: the pixel phase laid nothing of the page out, the read's account holds nothing
	// (pageCache.add keeps the last one).
	stale bool
	// changes is, by frame read, how many changes the page had made since the reader's watch
	// began when the frame's text was read (ModeChanges; -1: no watch): a read ahead is served
	// only while they stay (ahead.go).
	changes map[string]int
}

type rawRead struct {
	URL     string  `json:"url"`
	Title   string  `json:"title"`
	Heading string  `json:"heading"`
	Text    string  `json:"text"`
	Join    *string `json:"join"` // mode read: what goes between earlier reads' text and this one's (js/reader/50_walk.js)
	Links   []struct {
		Text string `json:"text"`
		Href string `json:"href"`
	} `json:"links"`
	Fields   []Field       `json:"fields"`
	Frames   []string      `json:"frames"`
	Controls []control     `json:"controls"`
	NRuns    int           `json:"nRuns"`
	Withheld int           `json:"withheld"`
	Still    string        `json:"still"`    // the frame's scroll positions (paint and layout modes)
	Exact    *bool         `json:"exact"`    // paint "runs" and "some": nothing but the runs' paint changed
	Off      []int         `json:"off"`      // paint "some": every run whose paint went off
	Tampered bool          `json:"tampered"` // paint "restore" and "on": the page changed itself since the first paint change
	Changed  *changedArea  `json:"changed"`  // where those changes may have drawn (with Tampered)
	Voided   []int         `json:"voided"`   // mode read: runs proven visible whose text changed since (withheld)
	ByNode   bool          `json:"byNode"`   // mode read: verdicts taken by node from the frame's last layout
	Account  *frameAccount `json:"account"`  // mode read: what became of every text node of the frame
	// NodeTexts: mode read with opts.nodeCount, for each element asked for (WithNodeTexts), its
	// own visible text and its labels', or null when it was not found.
	NodeTexts [][]string `json:"nodeTexts"`
	Changes   *int       `json:"changes"` // mode changes: the page's changes since the watch began
	// Boxes: mode boxes, by run index, what mode layout reports of it now, or "gone".
	Boxes  map[string]json.RawMessage `json:"boxes"`
	Layout json.RawMessage            `json:"-"`
}

// frameAccount is the reader's account of one frame (js/reader/90_result.js): characters other
// than white space handed out by this read, served by an earlier one, left for a later one, and
// withheld by reason; in debug mode the withheld nodes (List; Listed counts them all).
type frameAccount struct {
	Handed   int            `json:"handed"`
	Served   int            `json:"served"`
	Later    int            `json:"later"`
	Withheld map[string]int `json:"withheld"`
	List     []WithheldRun  `json:"list"`
	Listed   int            `json:"listed"`
}

// pageAccount is the page's account from its frames' reads, and the debug list.
func pageAccount(reads map[string]*rawRead, mainID string) (Account, []WithheldRun) {
	var a Account
	var list []WithheldRun
	for id, rr := range reads {
		a.Frames++
		fa := rr.Account
		if fa == nil {
			a.FramesLost++
			continue
		}
		a.Add(Account{Handed: fa.Handed + fa.Served, Pending: fa.Later, Withheld: fa.Withheld})
		for _, w := range fa.List {
			if id != mainID {
				w.Frame = id
			}
			list = append(list, w)
		}
	}
	return a, list
}

// snapshot reads the page in an isolated world per frame. The main frame must still hold a
// document of opened's origin. The credential check is part of the read: the DOM check before it,
// the reader's check in the same evaluation as each frame's read, and both again in every frame
// after it. When any of them finds a credential field, snapshot returns why and no snapshot:
// nothing read reaches the caller.
//
// With pixels on, prev is what earlier reads of the page decided (nil for the first): the read
// goes on from there, and its text holds only the runs it proved visible (visibility.go).
func (pr *pageReader) snapshot(ctx context.Context, opened string, prev *visState, want int) (*snapshot, string, error) {
	start := time.Now()
	defer pr.cfg.took("read", start)
	v, err := pr.view(ctx, nil)
	defer func() { v.close() }()
	if err != nil {
		return nil, "", err
	}
	if v.mainID == "" {
		return nil, "", errors.New("no main frame")
	}
	// Before the read: the page quiet (its requests and the short timers they start over, in
	// every frame), and no credential field seen by the watch since the last check.
	why, waited, err := pr.watch.quiet(ctx, v, time.Time{}, true)
	if err != nil || why != "" {
		return nil, why, err
	}
	if waited {
		if v, err = pr.view(ctx, v); err != nil {
			return nil, "", err
		}
	}
	mainID := v.mainID
	if why := v.domCredential(); why != "" {
		return nil, why, nil
	}
	reads := map[string]*rawRead{}
	// Visibility by rendering (visibility.go), for every frame: the page stays frozen from the
	// layout to the end of the reads, so that the reads walk the runs the shots judged.
	var verdicts map[string][]int
	var whys map[string]map[int]string
	vis := &visState{done: true}
	decided, stale := 0, false
	if pr.cfg.pixels {
		if err := freeze(ctx, v, "frozen"); err != nil {
			return nil, "", err
		}
		defer func() {
			if verdicts != nil {
				thaw(ctx, v)
			}
		}()
		start := time.Now()
		budget := min(time.Until(deadlineOf(ctx))/2, phaseTime(pr.cfg.pixelTime, prev.stuck()))
		pctx, cancel := context.WithTimeout(ctx, budget)
		job, err := pr.pixelVerdicts(pctx, v, prev, want)
		cancel()
		pr.cfg.took("pixels", start)
		// The phase ran its course (what is pending cannot be shown): what is pending is
		// withheld. A phase that had at least half its time and decided nothing (this machine
		// did not shoot one band in it) makes the page's bands smaller for the next, and past
		// maxShrink withholds what is pending. Otherwise the next read goes on.
		stuck := err != nil && job.decided == 0 && ctx.Err() == nil && budget >= pr.cfg.pixelTime/2
		final := err == nil || (stuck && job.shrink() >= maxShrink)
		verdicts, whys, vis = job.verdictsOf(final, err == nil)
		if stuck && !final {
			vis.shrink++
		}
		decided = job.decided
		// A phase that ran out of time before it laid the page out decided nothing of it: what
		// the earlier reads handed out and withheld is still the page's account.
		stale = verdicts[mainID] == nil && vis.keeps(mainID)
		proof := "two frames"
		if job.splits > 0 {
			proof = fmt.Sprintf("two frames (%d classes of overlapping runs shot apart)", job.splits)
		}
		if !job.twoFrames() {
			proof = "four frames (" + job.slowWhy + ")"
			if job.slowWhy == "" {
				proof = "four frames"
			}
		}
		pr.cfg.logf("bridge: visibility by rendering: %d frames, %d passes, %d shots, %s, %d runs decided, %d pending, %s%s",
			len(job.frames), job.passes, job.shots, proof, job.decided, job.undecided(), time.Since(start).Round(time.Millisecond), stopNote(err, final))
	}
	why, err = pr.readFrames(ctx, v, vis, verdicts, whys, reads, true)
	if err != nil {
		return nil, "", err
	}
	// The frames not read (not shown by the page, too deep, or whose read failed): their text is
	// counted, withheld, by the same reader (whose credential check runs there too). A frame that
	// cannot be evaluated at all is counted as lost.
	lost := 0
	for _, f := range v.frames {
		if reads[f] != nil || why != "" {
			continue
		}
		rr, err := pr.evalFrame(ctx, v, f, readerjs.ModeRead, map[string]any{"verdicts": []int{}, "forceWhy": readerjs.WhyFrame, "debug": pr.cfg.withheldList})
		if err != nil {
			lost++
			continue
		}
		if w := controlsCredential(rr.Controls); w != "" {
			why = w
			break
		}
		rr.Text, rr.Links, rr.Fields, rr.Frames = "", nil, nil, nil
		reads[f] = rr
	}
	if verdicts != nil {
		thaw(ctx, v)
		verdicts = nil
	}
	if why != "" {
		return nil, why, nil
	}
	if !sameOrigin(reads[mainID].URL, opened) {
		return nil, "", ErrPageChanged
	}
	// Every frame again, after the read and once the page is quiet: a frame or field added while
	// the frames were read, or by a script that ran when a request answered. A frozen page runs
	// what it missed once thawed: when the route saw a request start or end since the read began,
	// the quiet is counted from now.
	var since time.Time
	if pr.act.activeSince(start) {
		since = time.Now()
	}
	// A frame added meanwhile (a script that answered a request put it in) is in the next view,
	// not in this one: the page is quiet only once the frames of a view are (its document loaded,
	// its short timers over), so the wait goes on with each view that holds new frames (a few).
	var after *pageView
	for try := 0; ; try++ {
		if why, _, err := pr.watch.quiet(ctx, v, since, true); err != nil || why != "" {
			return nil, why, err
		}
		had := slices.Clone(v.frames)
		after, err = pr.view(ctx, v)
		v = after // its sessions, reused, are closed with it
		if err != nil {
			return nil, "", err
		}
		if try == 2 || !newFrames(had, after.frames) {
			break
		}
		since = time.Time{}
	}
	if why, err := pr.checkCredentials(ctx, after); err != nil || why != "" {
		return nil, why, err
	}
	if !sameOrigin(after.mainURL, opened) {
		return nil, "", ErrPageChanged
	}
	snap := &snapshot{title: reads[mainID].Title, heading: reads[mainID].Heading, vis: vis, decided: decided, join: reads[mainID].Join}
	snap.stale = stale
	snap.changes = map[string]int{}
	for f, rr := range reads {
		snap.withheld += rr.Withheld
		if rr.Changes != nil {
			snap.changes[f] = *rr.Changes
		}
	}
	snap.account, snap.list = pageAccount(reads, mainID)
	snap.account.Frames += lost
	snap.account.FramesLost += lost
	if snap.withheld > 0 {
		snap.unproven = "not shown by rendering: still hidden after scrolling, in a frame drawn transformed, past the bound of scroll passes, or not shot in the time a read has"
	}
	var links []rawLink
	snap.text = pr.assemble(mainID, reads, &links, &snap.fields, 0)
	whole := collapseBlankLines(snap.text)
	snap.text = capText(whole, pr.cfg.textCap)
	snap.cut = nonSpace(whole) - nonSpace(snap.text)
	snap.links = pr.decideLinks(links)
	return snap, "", nil
}

// readFrames reads the main frame and the child frames it shows, with the pixel phase's verdicts
// (nil: pixels off), into reads. Unless creds is false (VisibleText: its caller checks fields
// itself) it stops at the first frame that shows a credential field and returns why.
func (pr *pageReader) readFrames(ctx context.Context, v *pageView, vis *visState, verdicts map[string][]int, whys map[string]map[int]string, reads map[string]*rawRead, creds bool) (why string, err error) {
	var read func(frame string, depth int) error
	read = func(frame string, depth int) error {
		if v.owner[frame] == nil || depth > 8 || why != "" {
			return nil
		}
		extra := map[string]any{"debug": pr.cfg.withheldList}
		var vs []int
		if verdicts != nil {
			vs = verdicts[frame]
			if vs == nil {
				// A frame not laid out: all of its text is withheld, as not decided yet when
				// a phase that did not run its course kept the frame's runs for the next read
				// (it ran out of time before it laid the frame out).
				vs = []int{}
				extra["forceWhy"] = readerjs.WhyFrame
				if vis.keeps(frame) {
					extra["forceWhy"] = readerjs.WhyLater
				}
			}
			extra["verdicts"], extra["why"] = vs, whys[frame]
		}
		if ids := pr.cfg.nodes[frame]; len(ids) > 0 {
			extra["nodes"] = ids
		}
		rr, err := pr.evalFrame(ctx, v, frame, readerjs.ModeRead, extra)
		if err != nil {
			return err
		}
		if len(rr.Voided) > 0 && vis != nil && vis.runs[frame] != nil {
			// Proven visible, then changed: withheld by this read and by every later one (the
			// text the shots proved is no longer the page's).
			if vis.why[frame] == nil {
				vis.why[frame] = map[int]string{}
			}
			for _, i := range rr.Voided {
				if i >= 0 && i < len(vis.runs[frame]) {
					vis.runs[frame][i], vis.why[frame][i] = stWithheld, readerjs.WhyChanged
				}
			}
			pr.cfg.logf("bridge: %d runs proven visible changed their text after the proof: withheld", len(rr.Voided))
		}
		if verdicts != nil && len(vs) > 0 && rr.NRuns != len(vs) && !rr.ByNode {
			// Not the frame the shots judged (and no layout of it to take the verdicts from, by
			// node): withhold all of its text.
			if rr, err = pr.evalFrame(ctx, v, frame, readerjs.ModeRead, map[string]any{"verdicts": []int{}, "forceWhy": readerjs.WhyChanged, "debug": pr.cfg.withheldList, "nodes": extra["nodes"]}); err != nil {
				return err
			}
		}
		if w := controlsCredential(rr.Controls); creds && w != "" {
			why = w
			return nil
		}
		reads[frame] = rr
		for _, c := range rr.Frames {
			if err := read(c, depth+1); err != nil {
				pr.cfg.logf("bridge: frame not read: %v", err)
			}
		}
		return nil
	}
	err = read(v.mainID, 0)
	return why, err
}

type rawLink struct{ text, href string }

// assemble puts each visible child frame's text where its marker sits in the parent's text, and
// gathers links and fields in the same order.
func (pr *pageReader) assemble(frame string, reads map[string]*rawRead, links *[]rawLink, fields *[]Field, depth int) string {
	rr := reads[frame]
	if rr == nil || depth > 8 {
		return ""
	}
	for _, l := range rr.Links {
		*links = append(*links, rawLink{l.Text, l.Href})
	}
	*fields = append(*fields, rr.Fields...)
	var b strings.Builder
	text := rr.Text
	for {
		i := strings.Index(text, readerjs.FrameOpen)
		if i < 0 {
			b.WriteString(text)
			break
		}
		j := strings.Index(text[i:], readerjs.FrameClose)
		if j < 0 {
			b.WriteString(text[:i])
			break
		}
		b.WriteString(text[:i])
		id := text[i+len(readerjs.FrameOpen) : i+j]
		if child := pr.assemble(id, reads, links, fields, depth+1); child != "" {
			b.WriteString("\n")
			b.WriteString(child)
			b.WriteString("\n")
		}
		text = text[i+j+len(readerjs.FrameClose):]
	}
	if len(*fields) > DefaultFieldCap {
		*fields = (*fields)[:DefaultFieldCap]
	}
	return b.String()
}

// decideLinks resolves, decides and numbers the page's links. javascript: links are dropped.
func (pr *pageReader) decideLinks(raw []rawLink) []Link {
	out := make([]Link, 0, len(raw))
	seen := map[[2]string]bool{}
	for _, l := range raw {
		if len(out) >= DefaultLinkCap {
			break
		}
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l.href)), "javascript:") {
			continue
		}
		link := Link{Text: l.text}
		if l.href == "" {
			link.Reason = policy.ReasonMalformed
		} else {
			d, err := pr.pol.Decide(policy.DecideArgs{Method: http.MethodGet, URL: l.href})
			link.URL, link.Allowed, link.Reason = d.URL, err == nil && d.Allowed(), d.Reason
		}
		key := [2]string{link.Text, link.URL}
		if seen[key] {
			continue
		}
		seen[key] = true
		link.N = len(out) + 1
		out = append(out, link)
	}
	return out
}

func collapseBlankLines(t string) string {
	for strings.Contains(t, "\n\n\n") {
		t = strings.ReplaceAll(t, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(t)
}

// nonSpace counts the characters of t other than white space, as the reader counts them
// (JavaScript's \s: Unicode White_Space and U+FEFF, not U+0085).
func nonSpace(t string) int {
	n := 0
	for _, r := range t {
		if r == 0xFEFF || (unicode.IsSpace(r) && r != 0x85) {
			continue
		}
		n++
	}
	return n
}

// capText cuts t to at most n bytes on a rune boundary.
func capText(t string, n int) string {
	if len(t) <= n {
		return t
	}
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n]
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
