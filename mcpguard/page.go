package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/browser-agent/browser-agent/bridge"
)

// describeJS describes one editable element as bridge.Control, never its value, plus whether it
// holds one ("filled").
const describeJS = `const D = (el) => {
  const txt = (s) => String(s || '').replace(/\s+/g, ' ').trim().slice(0, 200);
  const names = [], near = [];
  const add = (a, s) => { s = txt(s); if (s) a.push(s); };
  const doc = el.ownerDocument;
  add(names, el.getAttribute('aria-label'));
  for (const attr of ['aria-labelledby', 'aria-describedby'])
    for (const id of (el.getAttribute(attr) || '').split(/\s+/)) { const r = id && doc.getElementById(id); if (r) add(names, r.textContent); }
  if (el.labels) for (const l of el.labels) add(names, l.textContent);
  for (const attr of ['placeholder', 'name', 'id', 'title']) add(names, el.getAttribute(attr));
  for (let n = el, i = 0; n && i < 3 && near.length === 0; n = n.parentElement, i++)
    for (let s = n.previousSibling, j = 0; s && j < 3; s = s.previousSibling, j++) add(near, s.textContent);
  const tag = el.tagName.toLowerCase();
  const cs = getComputedStyle(el);
  const sec = cs.webkitTextSecurity || cs.getPropertyValue('-webkit-text-security');
  let filled;
  if (typeof el.value === 'string' && (tag === 'input' || tag === 'textarea' || tag === 'select')) filled = el.value !== '';
  else filled = txt(el.textContent) !== '';
  return {tag, type: tag === 'input' ? String(el.type || 'text').toLowerCase() : txt(el.getAttribute('type')).toLowerCase(),
    role: txt(el.getAttribute('role')), autocomplete: txt(el.getAttribute('autocomplete')),
    inputmode: txt(el.getAttribute('inputmode')), pattern: String(el.getAttribute('pattern') || '').slice(0, 100),
    maxlength: el.maxLength > 0 ? el.maxLength : 0, masked: !!sec && sec !== 'none', names, near, filled,
    readonly: tag !== 'input' && tag !== 'textarea' && tag !== 'select' && !el.isContentEditable &&
      txt(el.getAttribute('aria-readonly')).toLowerCase() === 'true'};
};`

// targetJS describes the element a ref names.
const targetJS = `(el) => { ` + describeJS + ` return D(el); }`

// pageJS describes every filled editable element of the page: its document, the same-origin
// frames and the open shadow roots under it; it counts the frames it cannot enter.
const pageJS = `() => { ` + describeJS + `
  const out = []; let cross = 0;
  const stack = [document];
  while (stack.length && out.length < 500) {
    const root = stack.pop();
    for (const el of root.querySelectorAll('input, textarea, select, [contenteditable], [role=textbox], [role=searchbox], [role=spinbutton], [role=combobox]')) {
      const d = D(el); if (d.filled) out.push(d);
    }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) stack.push(el.shadowRoot);
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        let d = null; try { d = el.contentDocument; } catch (e) {}
        if (d) stack.push(d); else cross++;
      }
    }
  }
  return {controls: out, cross};
}`

// field is describeJS's answer.
type field struct {
	bridge.Control
	Filled bool `json:"filled"`
}

// refRE is a Playwright MCP snapshot ref: e12, or f3e12 inside a frame.
var refRE = regexp.MustCompile(`^(?:f[0-9]+)?e[0-9]+$`)

// lineRE is one element line of a snapshot: its role, its quoted name if any, and its ref.
var lineRE = regexp.MustCompile(`(?m)^\s*- ([a-zA-Z]+)(?: ("(?:[^"\\]|\\.)*"))?[^\n]*?\[ref=((?:f[0-9]+)?e[0-9]+)\]([^\n]*)$`)

// snapshotRefs are the refs of a snapshot text, each with "role name" (its value and states left
// out: they change when it is typed into or focused). ok is false when text holds no snapshot.
func snapshotRefs(text string) (refs map[string]string, ok bool) {
	i := strings.Index(text, "### Snapshot\n```yaml")
	if i < 0 {
		return nil, false
	}
	refs = map[string]string{}
	for _, m := range lineRE.FindAllStringSubmatch(text[i:], -1) {
		refs[m[3]] = strings.TrimSpace(m[1] + " " + m[2])
	}
	return refs, true
}

// textFields are the snapshot roles a value can be typed into.
var textFields = map[string]bool{"textbox": true, "searchbox": true, "spinbutton": true, "combobox": true}

// resultText is the text of a result, its parts joined.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// upstreamError is the error a result reports ("### Error"), or "".
func upstreamError(res *mcp.CallToolResult, text string) string {
	if res.IsError || strings.HasPrefix(text, "### Error") {
		e := strings.TrimPrefix(text, "### Error\n")
		if i := strings.Index(e, "\n###"); i >= 0 {
			e = e[:i]
		}
		return strings.TrimSpace(e)
	}
	return ""
}

// evalResult is the JSON after "### Result" of a browser_evaluate result.
func evalResult(text string, v any) error {
	_, r, ok := strings.Cut(text, "### Result\n")
	if !ok {
		return fmt.Errorf("no result in the upstream's answer")
	}
	if i := strings.Index(r, "\n### "); i >= 0 {
		r = r[:i]
	}
	return json.Unmarshal([]byte(r), v)
}

// dialogRE finds an open dialog or file chooser in a result's modal state.
var dialogRE = regexp.MustCompile(`- \["(alert|confirm|prompt|beforeunload)" dialog|- \[File chooser\]`)

// settleModal answers what a result says is open: an alert is accepted, any other dialog
// dismissed, a file chooser cancelled. It returns what it did, for the client.
func (g *Guard) settleModal(ctx context.Context, text string) ([]string, error) {
	var did []string
	for i := 0; i < 5; i++ {
		_, modal, ok := strings.Cut(text, "### Modal state")
		if !ok {
			return did, nil
		}
		m := dialogRE.FindStringSubmatch(modal)
		if m == nil {
			return did, nil
		}
		var res *mcp.CallToolResult
		var err error
		switch m[1] {
		case "":
			res, err = g.up.CallTool(ctx, &mcp.CallToolParams{Name: "browser_file_upload", Arguments: map[string]any{}})
			did = append(did, "cancelled a file chooser")
		case "alert":
			res, err = g.up.CallTool(ctx, &mcp.CallToolParams{Name: "browser_handle_dialog", Arguments: map[string]any{"accept": true}})
			did = append(did, "accepted an alert")
		default:
			res, err = g.up.CallTool(ctx, &mcp.CallToolParams{Name: "browser_handle_dialog", Arguments: map[string]any{"accept": false}})
			did = append(did, "dismissed a "+m[1]+" dialog")
		}
		if err != nil {
			return did, err
		}
		text = resultText(res)
	}
	return did, fmt.Errorf("the page keeps opening dialogs")
}

// upcall is one of the guard's own calls: a dialog in its way is settled and the call made again.
func (g *Guard) upcall(ctx context.Context, name string, args map[string]any) (string, error) {
	for i := 0; ; i++ {
		res, err := g.up.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		text := resultText(res)
		if e := upstreamError(res, text); e != "" {
			if strings.Contains(text, "### Modal state") && i < 2 {
				if _, err := g.settleModal(ctx, text); err != nil {
					return "", err
				}
				continue
			}
			return "", fmt.Errorf("%s: %s", name, e)
		}
		return text, nil
	}
}

// snapshot is the guard's own snapshot of the page: its refs with role and name.
func (g *Guard) snapshot(ctx context.Context) (map[string]string, error) {
	text, err := g.upcall(ctx, "browser_snapshot", map[string]any{})
	if err != nil {
		return nil, err
	}
	refs, ok := snapshotRefs(text)
	if !ok {
		return nil, fmt.Errorf("the upstream's snapshot has no page")
	}
	return refs, nil
}

// credentialAt says why the element ref names is a credential field, or "".
func (g *Guard) credentialAt(ctx context.Context, ref string) (string, bool, error) {
	text, err := g.upcall(ctx, "browser_evaluate", map[string]any{"target": ref, "function": targetJS})
	if err != nil {
		return "", false, err
	}
	var f field
	if err := evalResult(text, &f); err != nil {
		return "", false, err
	}
	return bridge.CredentialField(f.Control), f.Filled, nil
}

// maxFrameFields bounds the fields of cross-origin frames the guard reads one by one; a page with
// more is withheld.
const maxFrameFields = 40

// filledCredential says why the page shows a filled credential field, or "". An error means the
// page could not be read: the caller withholds.
func (g *Guard) filledCredential(ctx context.Context) (string, error) {
	if g.browser != nil {
		// The guard's own browser: every frame read in the guard's isolated world.
		fields, err := g.browser.filledFields(ctx)
		if err != nil {
			return "", err
		}
		for _, f := range fields {
			if why := bridge.CredentialField(f.Control); why != "" {
				return "the page shows a filled credential field (" + why + ")", nil
			}
		}
		return "", nil
	}
	text, err := g.upcall(ctx, "browser_evaluate", map[string]any{"function": pageJS})
	if err != nil {
		return "", err
	}
	var page struct {
		Controls []field `json:"controls"`
		Cross    int     `json:"cross"`
	}
	if err := evalResult(text, &page); err != nil {
		return "", err
	}
	for _, f := range page.Controls {
		if why := bridge.CredentialField(f.Control); why != "" {
			return "the page shows a filled credential field (" + why + ")", nil
		}
	}
	if page.Cross == 0 {
		return "", nil
	}
	// Frames of other origins: their text fields, one by one, by ref.
	snap, err := g.upcall(ctx, "browser_snapshot", map[string]any{})
	if err != nil {
		return "", err
	}
	n := 0
	for _, m := range lineRE.FindAllStringSubmatch(snap, -1) {
		if !textFields[m[1]] || !strings.HasPrefix(m[3], "f") {
			continue
		}
		if n++; n > maxFrameFields {
			return "the page's frames have more fields than the guard reads", nil
		}
		why, filled, err := g.credentialAt(ctx, m[3])
		if err != nil {
			return "", err
		}
		if filled && why != "" {
			return "a frame shows a filled credential field (" + why + ")", nil
		}
	}
	return "", nil
}
