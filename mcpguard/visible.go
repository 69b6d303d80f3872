package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/browser-agent/browser-agent/bridge"
	"golang.org/x/sync/errgroup"
)

// What the client is shown of the upstream's results: the snapshot's text only where rendering
// proves a person sees it (bridge.VisibleText on the guard's own DevTools session), and of the
// other sections only those that carry no text of the page's choosing beyond its address, title
// and dialogs.

// HiddenMark stands in a snapshot for text rendering did not prove visible.
const HiddenMark = "(hidden text withheld)"

// keptSections are the result sections passed on; the others (the code the upstream ran, which
// names elements by their accessible names; its events, which carry the page's console; a
// page's own tools) are dropped. The snapshot is passed filtered.
var keptSections = map[string]bool{"Page": true, "Open tabs": true, "Modal state": true, "Error": true, "Result": true, "Snapshot": true}

// proveVisible filters a result's text for the client: sections not kept are dropped, and each
// snapshot's text not proven visible is replaced by HiddenMark (visible is nil when there is no
// proof: every text of the snapshot is replaced). It returns what it did, for the client.
func proveVisible(text string, visible *visibleText) (string, []string) {
	var did []string
	var b strings.Builder
	dropped := 0
	for _, sec := range splitSections(text) {
		name := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(sec, "\n", 2)[0], "### "))
		if strings.HasPrefix(sec, "### ") && !keptSections[name] {
			dropped++
			continue
		}
		if name == "Error" {
			var n int
			sec, n = filterError(sec)
			if n > 0 {
				did = append(did, fmt.Sprintf("%d line(s) of the upstream's error withheld: they quote the page's markup", n))
			}
		}
		if name == "Snapshot" {
			var n int
			sec, n = filterSnapshot(sec, visible)
			if n > 0 {
				did = append(did, fmt.Sprintf("%d snapshot text(s) withheld: rendering did not prove a person sees them", n))
			}
		}
		b.WriteString(sec)
	}
	if dropped > 0 {
		did = append(did, fmt.Sprintf("%d section(s) of the upstream's result dropped (its code, events or the page's tools)", dropped))
	}
	return b.String(), did
}

// filterError withholds the lines of an error section that quote the page's markup (Playwright
// names the element in the way of a click by its HTML, text included): text no proof has seen.
func filterError(sec string) (string, int) {
	lines := strings.Split(sec, "\n")
	n := 0
	for i, l := range lines {
		if i > 0 && strings.Contains(l, "<") {
			lines[i], n = HiddenMark, n+1
		}
	}
	return strings.Join(lines, "\n"), n
}

// splitSections cuts text before each line that starts a section ("### ").
func splitSections(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		next := len(text)
		if j >= 0 {
			next = i + j + 1
		}
		if i > start && strings.HasPrefix(text[i:], "### ") {
			out = append(out, text[start:i])
			start = i
		}
		i = next
	}
	return append(out, text[start:])
}

// visibleText is the text rendering proved visible of each element a snapshot names, by its
// ref: the element's own subtree, and for a field its labels, white space normalized. A
// snapshot's line is matched against the text of its own element (the line's ref, else its
// nearest ancestor's), never against the page's: a hidden element whose text equals visible text
// elsewhere is not shown.
type visibleText struct{ byRef map[string][]string }

func newVisibleText(byRef map[string][]string) *visibleText {
	v := &visibleText{byRef: map[string][]string{}}
	for ref, texts := range byRef {
		for _, t := range texts {
			v.byRef[ref] = append(v.byRef[ref], normSpace(t))
		}
	}
	return v
}

// shows says whether s, white space normalized, is part of the visible text of the element ref
// names (its own, or one label's).
func (v *visibleText) shows(ref, s string) bool {
	s = normSpace(s)
	if s == "" {
		return true
	}
	if v == nil {
		return false
	}
	for _, t := range v.byRef[ref] {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// normSpace drops the characters the snapshot drops (zero width space, soft hyphen) and turns
// every run of white space into one space.
func normSpace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == 0x200B || r == 0xAD:
		case unicode.IsSpace(r):
			space = true
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		}
	}
	return b.String()
}

// filterSnapshot replaces, in a snapshot section, every name and text the visible text does not
// show by HiddenMark; a line it cannot parse (inside a yaml block or not: a snapshot in another
// form, the link to the upstream's snapshot file) is replaced whole. Roles, states and refs are
// kept, so the refs of what is shown stay usable. It returns the section and how many texts it
// withheld.
func filterSnapshot(sec string, visible *visibleText) (string, int) {
	lines := strings.Split(sec, "\n")
	n := 0
	var owners ownerStack
	for i, l := range lines {
		if i == 0 || strings.HasPrefix(l, "```") {
			continue // the section's heading, a block's fences
		}
		out, w := filterLine(l, visible, &owners)
		lines[i] = out
		n += w
	}
	return strings.Join(lines, "\n"), n
}

// ownerStack is the refs of the lines above the current one, by indent: a line without a ref
// of its own (a "- text:" child, a property) belongs to its nearest ancestor's element.
type ownerStack []struct {
	indent int
	ref    string
}

// owner is the ref a line at indent with its own ref (or "") is proven by, and pushes it.
func (o *ownerStack) owner(indent int, own string) string {
	for len(*o) > 0 && (*o)[len(*o)-1].indent >= indent {
		*o = (*o)[:len(*o)-1]
	}
	ref := own
	if ref == "" && len(*o) > 0 {
		ref = (*o)[len(*o)-1].ref
	}
	*o = append(*o, struct {
		indent int
		ref    string
	}{indent, ref})
	return ref
}

// attrRefRE is a snapshot line's ref attribute.
var attrRefRE = regexp.MustCompile(`\[ref=((?:f[0-9]+)?e[0-9]+)\]`)

// snapNode is one parsed snapshot line: "- role "name" [attrs]: value", or "- /prop: value".
type snapNode struct {
	indent, role, attrs string
	name, value         *string
}

// filterLine filters one snapshot line (see filterSnapshot).
func filterLine(l string, visible *visibleText, owners *ownerStack) (string, int) {
	nd, ok := parseSnapLine(l)
	if !ok {
		if strings.TrimSpace(l) == "" {
			return l, 0
		}
		return strings.Repeat(" ", len(l)-len(strings.TrimLeft(l, " "))) + "- text: " + HiddenMark, 1
	}
	own := ""
	if m := attrRefRE.FindStringSubmatch(nd.attrs); m != nil && !strings.HasPrefix(nd.role, "/") {
		own = m[1]
	}
	ref := owners.owner(len(nd.indent), own)
	if strings.HasPrefix(nd.role, "/") {
		// A property: a link's address is the page's, as the agent's own reads give it; any
		// other (a placeholder) is text.
		if nd.role == "/url" || nd.value == nil || visible.shows(ref, *nd.value) {
			return l, 0
		}
		return nd.indent + "- " + nd.role + ": " + HiddenMark, 1
	}
	w := 0
	if nd.name != nil && !visible.shows(ref, *nd.name) {
		nd.name, w = &hiddenMark, w+1
	}
	if nd.value != nil && !visible.shows(ref, *nd.value) {
		nd.value, w = &hiddenMark, w+1
	}
	if w == 0 {
		return l, 0
	}
	key := nd.role
	if nd.name != nil {
		key += ` "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(*nd.name) + `"`
	}
	key += nd.attrs
	out := nd.indent + "- " + key
	if nd.value != nil {
		out += ": " + *nd.value
	} else if strings.HasSuffix(strings.TrimRight(l, " "), ":") {
		out += ":"
	}
	return out, w
}

var hiddenMark = HiddenMark

// parseSnapLine parses one line of Playwright MCP's aria snapshot (its yaml: a key quoted in
// single quotes when it must be, a value in double quotes when it must be).
func parseSnapLine(l string) (snapNode, bool) {
	var nd snapNode
	rest := strings.TrimLeft(l, " ")
	nd.indent = l[:len(l)-len(rest)]
	var ok bool
	if rest, ok = strings.CutPrefix(rest, "- "); !ok {
		return nd, false
	}
	var key string
	if strings.HasPrefix(rest, "'") {
		// A single-quoted key: '' is a quote.
		var b strings.Builder
		i := 1
		for ; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return nd, false
		}
		key, rest = b.String(), rest[i+1:]
		if !parseKey(&nd, key, true) {
			return nd, false
		}
	} else {
		var ok bool
		if rest, ok = parseKeyPrefix(&nd, rest); !ok {
			return nd, false
		}
	}
	switch {
	case rest == "" || rest == ":":
		return nd, true
	case strings.HasPrefix(rest, ": "):
		v, ok := yamlValue(rest[2:])
		if !ok {
			return nd, false
		}
		nd.value = &v
		return nd, true
	}
	return nd, false
}

// parseKey parses a whole key (role, name, attributes) and nothing after it.
func parseKey(nd *snapNode, key string, whole bool) bool {
	rest, ok := parseKeyPrefix(nd, key)
	return ok && (!whole || rest == "")
}

// parseKeyPrefix parses the key at the start of s: a role (or a /property), an optional name in
// double quotes with backslash escapes, and attributes ([ref=e2], [level=1], [cursor=pointer]).
// It returns what follows.
func parseKeyPrefix(nd *snapNode, s string) (string, bool) {
	i := 0
	if strings.HasPrefix(s, "/") {
		i = 1
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	if i == 0 || (i == 1 && s[0] == '/') {
		return s, false
	}
	nd.role, s = s[:i], s[i:]
	if strings.HasPrefix(nd.role, "/") {
		return s, true
	}
	if strings.HasPrefix(s, ` "`) {
		var b strings.Builder
		j := 2
		for ; j < len(s); j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
				b.WriteByte(s[j])
				continue
			}
			if s[j] == '"' {
				break
			}
			b.WriteByte(s[j])
		}
		if j >= len(s) {
			return s, false
		}
		name := b.String()
		nd.name, s = &name, s[j+1:]
	}
	a := 0
	for strings.HasPrefix(s[a:], " [") {
		k := strings.IndexByte(s[a:], ']')
		if k < 0 {
			return s, false
		}
		attr := s[a+2 : a+k]
		if strings.ContainsAny(attr, " [\"'") || attr == "" {
			return s, false
		}
		a += k + 1
	}
	nd.attrs = s[:a]
	return s[a:], true
}

// yamlValue decodes a snapshot value: plain, or double-quoted with escapes.
func yamlValue(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return s, true
	}
	if len(s) < 2 || !strings.HasSuffix(s, `"`) {
		return "", false
	}
	var b strings.Builder
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(body) {
			return "", false
		}
		i++
		switch body[i] {
		case 'n', 'r', 't', 'b', 'f':
			b.WriteByte(' ')
		case 'x':
			if i+2 >= len(body) {
				return "", false
			}
			n, err := strconv.ParseUint(body[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(n))
			i += 2
		default:
			b.WriteByte(body[i])
		}
	}
	return b.String(), true
}

// proofTime bounds the pixel phase of one snapshot's proof: what it has not decided by then is
// withheld. At 10 s the second half of a long manual page (Python's tutorial introduction: 425
// of 474 texts kept at 30 s, 273 at 10 s) was withheld on a loaded machine.
const proofTime = 30 * time.Second

// visibleText proves by rendering which text of the page at pageURL a person sees, in the guard's
// own browser: the one tab showing pageURL (none, or more than one, is an error: the caller
// withholds), with its out-of-process frames.
func (b *browser) visibleText(ctx context.Context, pageURL string) (*visibleText, error) {
	tis, err := b.targets(ctx)
	if err != nil {
		return nil, err
	}
	var page string
	var frames []string
	for _, ti := range tis {
		switch {
		case ti.Type == "page" && ti.URL == pageURL:
			if page != "" {
				return nil, fmt.Errorf("more than one tab shows %s", pageURL)
			}
			page = ti.ID
		case ti.Type == "iframe":
			frames = append(frames, ti.ID)
		}
	}
	if page == "" {
		return nil, fmt.Errorf("no tab shows %s", pageURL)
	}
	var sessions []bridge.CDPSession
	for i, id := range append([]string{page}, frames...) {
		var att struct {
			Session string `json:"sessionId"`
		}
		if err := b.cdp.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}, &att); err != nil {
			if i == 0 {
				for _, s := range sessions {
					s.Detach()
				}
				return nil, err
			}
			continue // a frame closed since it was listed
		}
		sessions = append(sessions, &cdpSession{c: b.cdp, id: att.Session})
	}
	refs, nodes, err := refNodes(ctx, sessions)
	if err != nil {
		for _, s := range sessions {
			s.Detach()
		}
		return nil, err
	}
	v, err := bridge.VisibleText(ctx, sessions, bridge.WithPixelTime(proofTime), bridge.WithNodeTexts(nodes))
	if err != nil {
		return nil, err
	}
	byRef := map[string][]string{}
	for ref, n := range refs {
		if texts, ok := v.Nodes[n.frame][n.backend]; ok {
			byRef[ref] = texts
		}
	}
	return newVisibleText(byRef), nil
}

// refNode is the element a snapshot's ref names: its frame and backend node id.
type refNode struct {
	frame   string
	backend int
}

// utilityWorld is the prefix of the name of Playwright's utility world in each frame, where its
// snapshot for the model (mode ai) gives every element it names a ref, kept on the element as
// _ariaRef (playwright-core 1.64, computeAriaRef). The page's scripts cannot reach that world:
// the refs read there are Playwright's.
const utilityWorld = "__playwright_utility_world_"

// refsJS lists the elements of a frame's document and open shadow roots that carry a ref.
const refsJS = `(() => {
  const els = [], refs = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      const r = el._ariaRef;
      if (r && typeof r.ref === 'string') { els.push(el); refs.push(r.ref); }
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return {els, refs};
})()`

// refNodes resolves the upstream's refs to elements in every frame the sessions show: each
// session's Playwright utility worlds are asked which element holds which ref. A ref found on two
// elements is left out (no element proves it). nodes are the elements by frame, for the proof.
func refNodes(ctx context.Context, sessions []bridge.CDPSession) (map[string]refNode, map[string][]int, error) {
	refs := map[string]refNode{}
	twice := map[string]bool{}
	nodes := map[string][]int{}
	for _, bs := range sessions {
		s := bs.(*cdpSession)
		if err := s.c.call(ctx, s.id, "Runtime.enable", nil, nil); err != nil {
			return nil, nil, err
		}
		worlds := s.c.contexts(s.id)
		s.c.call(ctx, s.id, "Runtime.disable", nil, nil)
		for _, w := range worlds {
			if !strings.HasPrefix(w.Name, utilityWorld) || w.AuxData.FrameID == "" {
				continue
			}
			found, err := s.refsIn(ctx, w.ID)
			if err != nil {
				continue // a frame gone since: its refs are not proven
			}
			for ref, backend := range found {
				if _, ok := refs[ref]; ok {
					twice[ref] = true
				}
				refs[ref] = refNode{w.AuxData.FrameID, backend}
				nodes[w.AuxData.FrameID] = append(nodes[w.AuxData.FrameID], backend)
			}
		}
	}
	for ref := range twice {
		delete(refs, ref)
	}
	return refs, nodes, nil
}

// refsIn are the refs of one utility world's document, each with its element's backend node id.
func (s *cdpSession) refsIn(ctx context.Context, world int) (map[string]int, error) {
	const group = "browser-agent-guard-refs"
	defer s.c.call(ctx, s.id, "Runtime.releaseObjectGroup", map[string]any{"objectGroup": group}, nil)
	type object struct {
		Result struct {
			ObjectID string          `json:"objectId"`
			Value    json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct{ Text string } `json:"exceptionDetails"`
	}
	var all object
	if err := s.c.call(ctx, s.id, "Runtime.evaluate", map[string]any{"expression": refsJS, "contextId": world, "objectGroup": group}, &all); err != nil {
		return nil, err
	}
	if all.Exception != nil || all.Result.ObjectID == "" {
		return nil, fmt.Errorf("refs: the utility world did not answer")
	}
	var names, els object
	if err := s.c.call(ctx, s.id, "Runtime.callFunctionOn", map[string]any{"objectId": all.Result.ObjectID, "functionDeclaration": "function() { return this.refs; }", "returnByValue": true, "objectGroup": group}, &names); err != nil {
		return nil, err
	}
	if err := s.c.call(ctx, s.id, "Runtime.callFunctionOn", map[string]any{"objectId": all.Result.ObjectID, "functionDeclaration": "function() { return this.els; }", "objectGroup": group}, &els); err != nil {
		return nil, err
	}
	var refs []string
	if err := json.Unmarshal(names.Result.Value, &refs); err != nil {
		return nil, err
	}
	var props struct {
		Result []struct {
			Name  string `json:"name"`
			Value struct {
				ObjectID string `json:"objectId"`
			} `json:"value"`
		} `json:"result"`
	}
	if err := s.c.call(ctx, s.id, "Runtime.getProperties", map[string]any{"objectId": els.Result.ObjectID, "ownProperties": true}, &props); err != nil {
		return nil, err
	}
	// One DOM.describeNode each, many in flight at once (a long page has thousands of refs).
	backends := make([]int, len(props.Result))
	var g errgroup.Group
	g.SetLimit(describeInFlight)
	for k, p := range props.Result {
		i, err := strconv.Atoi(p.Name)
		if err != nil || i < 0 || i >= len(refs) || p.Value.ObjectID == "" {
			continue
		}
		g.Go(func() error {
			var d struct {
				Node struct {
					BackendNodeID int `json:"backendNodeId"`
				} `json:"node"`
			}
			if err := s.c.call(ctx, s.id, "DOM.describeNode", map[string]any{"objectId": p.Value.ObjectID}, &d); err == nil {
				backends[k] = d.Node.BackendNodeID
			}
			return nil
		})
	}
	g.Wait()
	out := map[string]int{}
	for k, p := range props.Result {
		i, err := strconv.Atoi(p.Name)
		if err != nil || i < 0 || i >= len(refs) || backends[k] == 0 {
			continue
		}
		if _, ok := out[refs[i]]; ok {
			out[refs[i]] = 0 // on two elements: proven by neither
			continue
		}
		out[refs[i]] = backends[k]
	}
	return out, nil
}

// describeInFlight bounds the DOM.describeNode calls of refsIn in flight at once.
const describeInFlight = 16

// cdpSession is one of the guard's flattened DevTools sessions as bridge.CDPSession.
type cdpSession struct {
	c  *cdpConn
	id string
}

// cdpCallTime bounds one command on a cdpSession (bridge.CDPSession's Send takes no context).
const cdpCallTime = 30 * time.Second

func (s *cdpSession) Send(method string, params map[string]any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cdpCallTime)
	defer cancel()
	var p any
	if params != nil {
		p = params
	}
	var out any
	err := s.c.call(ctx, s.id, method, p, &out)
	return out, err
}

func (s *cdpSession) Detach() error {
	ctx, cancel := context.WithTimeout(context.Background(), cdpCallTime)
	defer cancel()
	s.c.contexts(s.id) // worlds it reported after refNodes read them
	return s.c.call(ctx, "", "Target.detachFromTarget", map[string]any{"sessionId": s.id}, nil)
}

var _ bridge.CDPSession = (*cdpSession)(nil)
