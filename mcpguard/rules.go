package mcpguard

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/browser-agent/browser-agent/policy"
)

// DefaultTools are the upstream tools the guard offers, in Playwright MCP's names. Script
// (browser_evaluate, browser_run_code_unsafe), file (browser_file_upload, browser_drop), network,
// storage, console, dialog and form-filling tools are never offered.
var DefaultTools = []string{
	"browser_navigate", "browser_navigate_back", "browser_snapshot", "browser_click", "browser_type",
	"browser_press_key", "browser_select_option", "browser_hover", "browser_wait_for", "browser_tabs",
	"browser_take_screenshot", "browser_close",
}

// Rules of the guard's own decisions, as the audit records them.
const (
	RuleTool       = "guard.tool"       // a tool the guard does not offer
	RuleArgs       = "guard.args"       // arguments that are not a JSON object, or write a file
	RuleRef        = "guard.ref"        // a target that is not a ref of the snapshot shown last, or changed since
	RuleCredential = "guard.credential" // typing or selecting into a credential field
	RuleSubmit     = "guard.submit"     // typing that would submit
	RuleKey        = "guard.key"        // a key other than a movement key
	RuleWithheld   = "guard.withheld"   // a result withheld: a filled credential field, or the page unreadable
	RuleAllowed    = "guard.allowed"    // passed to the upstream
	RuleUpstream   = "guard.upstream"   // the upstream failed the call
)

// movementKeys are the only keys browser_press_key may press: they move focus, the caret or the
// view, and submit nothing.
var movementKeys = []string{
	"ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End", "Tab", "Shift+Tab",
}

// refTools change the page at a target: the target must be a ref vetted against a fresh snapshot.
var refTools = []string{"browser_click", "browser_type", "browser_select_option", "browser_hover"}

// verdict is the guard's decision on one call.
type verdict struct {
	allow  bool
	layer  string
	rule   string
	reason string
	url    string // the URL a navigation asked for, to record (redacted)
}

func refuse(rule, format string, args ...any) *verdict {
	return &verdict{layer: policy.LayerCoordinator, rule: rule, reason: fmt.Sprintf(format, args...)}
}

// vet decides a call before it is passed on; nil lets it pass.
func (g *Guard) vet(ctx context.Context, name string, args map[string]any) *verdict {
	if _, ok := args["filename"]; ok {
		return refuse(RuleArgs, "%s: writing a file (filename) is not offered", name)
	}
	switch name {
	case "browser_navigate":
		u, _ := args["url"].(string)
		return g.decideURL(u)
	case "browser_tabs":
		if u, ok := args["url"].(string); ok && u != "" {
			return g.decideURL(u)
		}
	case "browser_press_key":
		k, _ := args["key"].(string)
		if !slices.Contains(movementKeys, k) {
			return refuse(RuleKey, "key %q is not a movement key (%s): a key may submit or run a shortcut", policy.Cut(k, 40), strings.Join(movementKeys, ", "))
		}
	case "browser_snapshot", "browser_take_screenshot":
		if t, ok := args["target"].(string); ok && !refRE.MatchString(t) {
			return refuse(RuleRef, "%s: the target must be a ref from a snapshot (e.g. e12), not a selector", name)
		}
	}
	if !slices.Contains(refTools, name) {
		return g.vetPayment(ctx, name, "")
	}
	if name == "browser_type" {
		if s, _ := args["submit"].(bool); s {
			return refuse(RuleSubmit, "typing that submits (submit: true) is refused: click the form's button")
		}
		if t, _ := args["text"].(string); strings.ContainsAny(t, "\r\n") {
			return refuse(RuleSubmit, "typing a line break is refused: it may submit the form")
		}
	}
	ref, _ := args["target"].(string)
	if !refRE.MatchString(ref) {
		return refuse(RuleRef, "%s: the target must be a ref from the last snapshot (e.g. e12), not a selector", name)
	}
	shown, ok := g.shown[ref]
	if !ok {
		return refuse(RuleRef, "ref %s is not in the last snapshot you were shown: take a snapshot", ref)
	}
	now, err := g.snapshot(ctx)
	if err != nil {
		return refuse(RuleRef, "the guard could not take its own snapshot before %s: %v", name, err)
	}
	cur, ok := now[ref]
	if !ok {
		return refuse(RuleRef, "ref %s is no longer on the page: take a new snapshot", ref)
	}
	if cur != shown {
		return refuse(RuleRef, "ref %s has changed since the snapshot you were shown: take a new snapshot", ref)
	}
	if name == "browser_type" || name == "browser_select_option" {
		why, _, err := g.credentialAt(ctx, ref)
		if err != nil {
			return refuse(RuleCredential, "the guard could not read the field %s: %v", ref, err)
		}
		if why != "" {
			return refuse(RuleCredential, "%s is a credential field (%s): a person types into it, not the model", ref, why)
		}
	}
	if v := g.vetPayment(ctx, name, cur); v != nil {
		return v
	}
	g.noteForms(ctx, name)
	return nil
}

// decideURL is the policy's decision on navigating to raw.
func (g *Guard) decideURL(raw string) *verdict {
	u, err := policy.ParseURL(raw, "")
	if err != nil {
		return &verdict{layer: policy.LayerPolicy, rule: "url", reason: "not a URL: " + err.Error()}
	}
	d := g.cfg.Policy.DecideURL("GET", u)
	v := &verdict{allow: d.Verdict == policy.Allow, layer: policy.LayerPolicy, rule: d.Rule, reason: d.Reason, url: raw}
	if v.allow {
		return nil
	}
	return v
}
