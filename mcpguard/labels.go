package mcpguard

import (
	"context"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// A held write's fields are shown by the labels the page gives them: before each click in the
// write mode the guard reads the forms of every frame of its own browser in its isolated world
// (the page's script does not run there); at hold time it finds the form whose action and method
// are the held request's, and takes each
// field's label and its description as bridge.Control (never its value). The labels are the
// page's text: untrusted, shown only to the person, escaped by the page's template; a field the
// bridge's detection calls a credential or card field is shown as "hidden" whatever it holds.

// formsJS lists the forms of one frame's document and the open shadow roots under it: each with
// its resolved action, its method and its named fields.
const formsJS = `(() => { ` + describeJS + `
  const txt = (s) => String(s || '').replace(/\s+/g, ' ').trim().slice(0, 120);
  const out = [];
  const stack = [document];
  while (stack.length && out.length < 50) {
    const root = stack.pop();
    for (const f of root.querySelectorAll('form')) {
      let action = '';
      try { action = new URL(f.getAttribute('action') || '', document.baseURI).href; } catch (e) { continue; }
      const fields = [];
      for (const el of f.elements) {
        if (!el.name || fields.length >= 200) continue;
        const labels = [];
        if (el.labels) for (const l of el.labels) labels.push(txt(l.textContent));
        const label = labels.filter(Boolean).join(' / ') || txt(el.getAttribute('aria-label')) || txt(el.getAttribute('placeholder'));
        fields.push({name: String(el.name).slice(0, 120), label, control: D(el)});
      }
      out.push({action, method: String(f.getAttribute('method') || 'get').toUpperCase(), fields});
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) stack.push(el.shadowRoot);
  }
  return out;
})()`

// pageForm is one form as formsJS reads it.
type pageForm struct {
	Action string      `json:"action"`
	Method string      `json:"method"`
	Fields []formField `json:"fields"`
}

type formField struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Control field  `json:"control"`
}

// forms are the forms of every frame of every page in the guard's browser.
func (b *browser) forms(ctx context.Context) ([]pageForm, error) {
	return readAll[pageForm](ctx, b, formsJS)
}

// heldLabel is what the page says of one field of a held write.
type heldLabel struct {
	label  string
	secret bool // a credential or card field by the bridge's detection
}

// noteForms reads the page's forms before a click in the write mode, for the labels of what the
// click may send: a held request's document is mid-navigation, and a frame that is navigating
// does not answer the guard's reads. A read that fails leaves no forms: the preview then shows the
// fields by name.
func (g *Guard) noteForms(ctx context.Context, tool string) {
	if g.holds == nil || g.browser == nil || tool != "browser_click" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	forms, err := g.browser.forms(ctx)
	if err != nil {
		g.cfg.Logf("guard: the page's forms could not be read for the approval page: %v", err)
	}
	g.holds.mu.Lock()
	g.holds.forms = forms
	g.holds.mu.Unlock()
}

// labelsFor are the labels of h's fields in the form among forms whose action and method are
// h's, by field name; nil when none matches (a script's request has no form).
func labelsFor(forms []pageForm, h *proxy.Held) map[string]heldLabel {
	want := canonical(h.URL)
	var out map[string]heldLabel
	for _, f := range forms {
		if f.Method != h.Method || canonical(f.Action) != want {
			continue
		}
		if out == nil {
			out = map[string]heldLabel{}
		}
		for _, ff := range f.Fields {
			if _, seen := out[ff.Name]; seen {
				continue
			}
			secret := bridge.CredentialField(ff.Control.Control) != "" || cardField(ff.Control.Control) != ""
			out[ff.Name] = heldLabel{label: ff.Label, secret: secret}
		}
	}
	return out
}

// canonical is raw's origin, path and query as the policy canonicalizes them (the held
// request's URL is one), without a fragment; "" when it does not parse.
func canonical(raw string) string {
	u, err := policy.ParseURL(raw, "")
	if err != nil {
		return ""
	}
	s := u.Origin() + u.Path()
	if q := u.RawQuery(); q != "" {
		s += "?" + q
	}
	return s
}
