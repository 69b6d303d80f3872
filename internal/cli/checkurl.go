package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/policy"
)

// DefaultDemoOrigin is where cmd/demo-site listens by default, and the origin of the embedded policy.
const DefaultDemoOrigin = "http://127.0.0.1:8081"

// loadPolicy loads FILE, or the embedded demo-site policy for origin when file is "".
func loadPolicy(file, origin string) (*policy.Policy, error) {
	if file == "" {
		return policy.Parse(demosite.PolicyYAML(origin), "embedded demo-site policy")
	}
	return policy.Load(file)
}

// checkResult is one line of check-url: the URL as given (redacted when it held a password), the
// method, and the policy's Decision (verdict, rule, reason and the canonical URL).
type checkResult struct {
	URL    string `json:"url"`
	Method string `json:"method"`
	policy.Decision
}

// checkURLCmd is "browser-agent check-url --policy FILE [--method M] URL...".
func checkURLCmd(e *env, args []string) error {
	fs := newFlags(e, "check-url", "[--policy FILE] [--method M] URL...")
	file := fs.String("policy", "", "policy file (default: the embedded demo-site policy for "+DefaultDemoOrigin+")")
	method := fs.String("method", "GET", "HTTP method of the request to decide")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError("no URL given")
	}
	p, err := loadPolicy(*file, DefaultDemoOrigin)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	m := strings.ToUpper(strings.TrimSpace(*method))
	if m == "" || strings.ContainsAny(m, " \t\r\n") {
		return usageError("--method %q is not an HTTP method", *method)
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	denied := 0
	for _, u := range fs.Args() {
		d, err := p.Decide(policy.DecideArgs{Method: m, URL: u})
		if err != nil {
			return err
		}
		if !d.Allowed() {
			denied++
		}
		echo := u
		if d.Reason == policy.ReasonUserinfo {
			echo = d.URL // never print a password back
		}
		if err := enc.Encode(checkResult{URL: echo, Method: m, Decision: d}); err != nil {
			return err
		}
	}
	if denied > 0 {
		return &ExitError{Code: ExitBlocked, Err: fmt.Errorf("%d of %d URLs denied", denied, fs.NArg())}
	}
	return nil
}

// policyCmd is "browser-agent policy validate FILE".
func policyCmd(e *env, args []string) error {
	if len(args) == 0 || args[0] != "validate" {
		return usageError("usage: browser-agent policy validate FILE")
	}
	fs := newFlags(e, "policy validate", "FILE")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError("policy validate takes exactly one FILE")
	}
	p, err := policy.Load(fs.Arg(0))
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	l := p.Limits()
	wall := p.Wall()
	if wall == "" {
		wall = policy.WallAuto // the launch's default
	}
	fmt.Fprintf(e.stdout, "%s: valid: %d site(s), %d approved model(s), max_redirect_hops %d, max_steps %d, wall %s\n",
		fs.Arg(0), len(p.Sites()), len(p.ApprovedModels()), l.MaxRedirectHops, l.MaxSteps, wall)
	for _, s := range p.Sites() {
		fmt.Fprintf(e.stdout, "  %s read %s", s.Origin, strings.Join(s.Read, " "))
		if s.Search != "" {
			fmt.Fprintf(e.stdout, " search %s", s.Search)
		}
		fmt.Fprintln(e.stdout)
		// What each variable holds decides how write detection reads it (issue 24).
		for _, v := range p.Variables(s.Origin) {
			meaning := kindMeaning[v.Kind]
			if v.Why == "action parameter" {
				meaning = "names an action: its value is a command unless it only reads (view, history, …)"
			}
			fmt.Fprintf(e.stdout, "    %-28s %-22s %-5s (%s): %s\n", v.Route, v.Name, v.Kind, v.Why, meaning)
		}
	}
	return nil
}

// kindMeaning says in a line how write detection reads a variable of each kind.
var kindMeaning = map[policy.Kind]string{
	policy.KindID:   "an identifier: a write word in it is a command",
	policy.KindText: "free text: content, except a bare verb after a record and an action parameter inside it",
	policy.KindPath: "the rest of the path, names read as identifiers (write *:text for titles or file paths)",
}
