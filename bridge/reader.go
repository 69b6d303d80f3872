package bridge

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

//go:embed js/reader.js
var readerJS string

// cdpCall sends one CDP command and decodes its result into out. CDPSession.Send cannot be
// cancelled, so a hung renderer costs a goroutine until the session closes, not the caller.
func cdpCall(ctx context.Context, sess playwright.CDPSession, method string, params map[string]any, out any) error {
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
	sess   playwright.CDPSession
	root   string // frame id at the root of the session
	frames []frameEntry
	doc    *cdpNode
}

type frameEntry struct {
	id, parent, url string
}

// attach opens CDP sessions for the page and for every out-of-process iframe (site isolation
// puts a cross-site iframe in its own renderer; it has its own session). It loads each session's
// frame tree and its DOM, closed shadow roots and same-process frames included.
func (s *Session) attach(ctx context.Context) ([]*target, func(), error) {
	var targets []*target
	cleanup := func() {
		for _, t := range targets {
			detach(t.sess)
		}
	}
	main, err := s.bctx.NewCDPSession(s.page)
	if err != nil {
		return nil, cleanup, fmt.Errorf("page session: %w", err)
	}
	targets = append(targets, &target{sess: main})
	mf := s.page.MainFrame()
	for _, f := range s.page.Frames() {
		if f == mf {
			continue
		}
		fs, err := s.bctx.NewCDPSession(f)
		if err != nil {
			continue // a same-process frame (it is in its parent's session) or a detached one
		}
		targets = append(targets, &target{sess: fs})
	}
	for _, t := range targets {
		var tree struct {
			FrameTree json.RawMessage `json:"frameTree"`
		}
		if err := cdpCall(ctx, t.sess, "Page.getFrameTree", nil, &tree); err != nil {
			if t.sess == main {
				return targets, cleanup, err
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
				return targets, cleanup, err
			}
			continue
		}
		doc.Root.scrub()
		t.doc = doc.Root
	}
	return targets, cleanup, nil
}

// detachWait bounds the wait for one CDP session's Detach.
const detachWait = 2 * time.Second

// detach ends a CDP session without waiting more than detachWait. Detach takes no context, and a
// renderer that never yields (a page in an endless script loop) never answers it: waiting would
// hang Open or Read past every deadline. A Detach left running ends when the browser closes.
func detach(sess playwright.CDPSession) {
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

// scanCredentials looks for a credential field in every frame of the page: main, same-process and
// out-of-process frames, open and closed shadow roots. It returns why the page is withheld, or "";
// and the URL of the document in the main frame.
func (s *Session) scanCredentials(ctx context.Context) (why, mainURL string, err error) {
	targets, cleanup, err := s.attach(ctx)
	defer cleanup()
	if err != nil {
		return "", "", err
	}
	if len(targets[0].frames) > 0 {
		mainURL = targets[0].frames[0].url
	}
	for _, t := range targets {
		if t.doc == nil {
			continue
		}
		if why := findCredential(t.doc); why != "" {
			return why, mainURL, nil
		}
	}
	return "", mainURL, nil
}

// snapshot is what the reader returns for a page, frames assembled.
type snapshot struct {
	title  string
	text   string
	links  []Link
	fields []Field
}

type rawRead struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Links []struct {
		Text string `json:"text"`
		Href string `json:"href"`
	} `json:"links"`
	Fields []Field  `json:"fields"`
	Frames []string `json:"frames"`
}

// snapshot reads the page in an isolated world per frame. The main frame must still hold a
// document of opened's origin.
func (s *Session) snapshot(ctx context.Context, opened string) (*snapshot, error) {
	targets, cleanup, err := s.attach(ctx)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	// Which session owns a frame: the session rooted at it, else the deepest session listing it.
	owner := map[string]*target{}
	rooted := map[string]bool{}
	children := map[string][]string{}
	listed := map[string]bool{}
	for _, t := range targets {
		for _, f := range t.frames {
			if f.id == t.root {
				owner[f.id], rooted[f.id] = t, true
			} else if !rooted[f.id] {
				owner[f.id] = t
			}
			if f.parent != "" && !listed[f.id] {
				children[f.parent] = append(children[f.parent], f.id)
			}
			listed[f.id] = true
		}
	}
	// Closed shadow roots per frame, found in the DOM of the session that renders the frame.
	type closedRoot struct {
		t       *target
		backend int
	}
	closed := map[string][]closedRoot{}
	for _, t := range targets {
		if t.doc == nil {
			continue
		}
		var walk func(n *cdpNode, frame string)
		walk = func(n *cdpNode, frame string) {
			for _, sr := range n.ShadowRoots {
				if sr.ShadowRootType == "closed" {
					closed[frame] = append(closed[frame], closedRoot{t, sr.BackendNodeID})
				}
				walk(sr, frame)
			}
			for _, c := range n.Children {
				walk(c, frame)
			}
			if n.ContentDocument != nil && n.FrameID != "" {
				walk(n.ContentDocument, n.FrameID)
			}
		}
		walk(t.doc, t.root)
	}

	const group = "browser-agent-reader"
	reads := map[string]*rawRead{}
	var read func(frame string, depth int) error
	read = func(frame string, depth int) error {
		t := owner[frame]
		if t == nil || depth > 8 {
			return nil
		}
		var world struct {
			ID int `json:"executionContextId"`
		}
		if err := cdpCall(ctx, t.sess, "Page.createIsolatedWorld", map[string]any{
			"frameId": frame, "worldName": s.world, "grantUniveralAccess": false,
		}, &world); err != nil {
			return err
		}
		defer func() {
			_ = cdpCall(ctx, t.sess, "Runtime.releaseObjectGroup", map[string]any{"objectGroup": group}, nil)
		}()
		args := []map[string]any{nil}
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
		for _, cr := range closed[frame] {
			if cr.t != t {
				continue
			}
			if id := resolve(cr.backend); id != "" {
				args = append(args, map[string]any{"objectId": id})
				nClosed++
			}
		}
		var frameIDs []string
		for _, c := range children[frame] {
			var fo struct {
				BackendNodeID int `json:"backendNodeId"`
			}
			if cdpCall(ctx, t.sess, "DOM.getFrameOwner", map[string]any{"frameId": c}, &fo) != nil || fo.BackendNodeID == 0 {
				continue
			}
			if id := resolve(fo.BackendNodeID); id != "" {
				args = append(args, map[string]any{"objectId": id})
				frameIDs = append(frameIDs, c)
			}
		}
		args[0] = map[string]any{"value": map[string]any{
			"closedCount": nClosed, "frameIds": frameIDs, "textCap": s.cfg.textCap,
			"linkCap": DefaultLinkCap, "fieldCap": DefaultFieldCap, "minFontPx": 6,
		}}
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
			return err
		}
		if res.ExceptionDetails != nil {
			return fmt.Errorf("reader: %s %s", res.ExceptionDetails.Text, firstLine(res.ExceptionDetails.Exception.Description))
		}
		var rr rawRead
		if err := json.Unmarshal(res.Result.Value, &rr); err != nil {
			return fmt.Errorf("reader result: %w", err)
		}
		reads[frame] = &rr
		for _, c := range rr.Frames {
			if err := read(c, depth+1); err != nil {
				s.cfg.logf("bridge: frame not read: %v", err)
			}
		}
		return nil
	}
	mainID := targets[0].root
	if mainID == "" {
		return nil, errors.New("no main frame")
	}
	if err := read(mainID, 0); err != nil {
		return nil, err
	}
	if !sameOrigin(reads[mainID].URL, opened) {
		return nil, ErrPageChanged
	}
	snap := &snapshot{title: reads[mainID].Title}
	var links []rawLink
	snap.text = s.assemble(mainID, reads, &links, &snap.fields, 0)
	snap.text = capText(collapseBlankLines(snap.text), s.cfg.textCap)
	snap.links = s.decideLinks(links)
	return snap, nil
}

type rawLink struct{ text, href string }

// assemble puts each visible child frame's text where its marker sits in the parent's text, and
// gathers links and fields in the same order.
func (s *Session) assemble(frame string, reads map[string]*rawRead, links *[]rawLink, fields *[]Field, depth int) string {
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
		i := strings.IndexRune(text, '\uE000')
		if i < 0 {
			b.WriteString(text)
			break
		}
		j := strings.IndexRune(text[i:], '\uE001')
		if j < 0 {
			b.WriteString(text[:i])
			break
		}
		b.WriteString(text[:i])
		id := text[i+len("\uE000") : i+j]
		if child := s.assemble(id, reads, links, fields, depth+1); child != "" {
			b.WriteString("\n")
			b.WriteString(child)
			b.WriteString("\n")
		}
		text = text[i+j+len("\uE001"):]
	}
	if len(*fields) > DefaultFieldCap {
		*fields = (*fields)[:DefaultFieldCap]
	}
	return b.String()
}

// decideLinks resolves, decides and numbers the page's links. javascript: links are dropped.
func (s *Session) decideLinks(raw []rawLink) []Link {
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
			d, err := s.pol.Decide(policy.DecideArgs{Method: http.MethodGet, URL: l.href})
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
