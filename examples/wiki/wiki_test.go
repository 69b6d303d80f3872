package wiki

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/coordinator/offline"
	"github.com/browser-agent/browser-agent/internal/guarded"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// rt is the driver and Chromium the guarded browsers of this package start from.
var rt *bridge.Runtime

func TestMain(m *testing.M) {
	var err error
	// Never skip: a machine without Chromium or the driver fails the package.
	if rt, err = bridge.NewRuntime(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the example's tests drive a real Chromium: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	rt.Close()
	os.Exit(code)
}

// wiki serves the example wiki over scheme and returns its policy and the egress proxy's options
// (over https, the proxy trusts the wiki's own authority and nothing else added).
func wiki(t *testing.T, scheme string) (*policy.Policy, []proxy.Option) {
	t.Helper()
	var srv *httptest.Server
	var popts []proxy.Option
	if scheme == "https" {
		var ca *x509.Certificate
		srv, ca = testutil.NewTLSServer(Handler())
		popts = append(popts, proxy.WithUpstreamRoots(ca))
	} else {
		srv = httptest.NewServer(Handler())
	}
	t.Cleanup(srv.Close)
	pol, err := policy.Parse(PolicyYAML(srv.URL), "examples/wiki/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return pol, popts
}

// run runs task under pol with model, in a guarded browser (bridge and egress proxy).
func run(t *testing.T, pol *policy.Policy, popts []proxy.Option, task string, model coordinator.Model) coordinator.Result {
	t.Helper()
	return coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: task, Model: model,
		Launch: func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
			b, err := guarded.LaunchOn(ctx, rt, pol, popts)
			if err != nil {
				return nil, nil, err
			}
			return b, b, nil
		}})
}

func script(steps ...coordinator.ScriptStep) coordinator.Model {
	return coordinator.ScriptModel("script:wiki", coordinator.Script{Steps: steps})
}

func call(name string, args any) coordinator.ScriptStep {
	b, _ := json.Marshal(args)
	return coordinator.ScriptStep{Call: name, Args: b}
}

func final(v any) coordinator.ScriptStep {
	b, _ := json.Marshal(v)
	return coordinator.ScriptStep{Final: b}
}

// TestWiki points the agent at a site that is not the demo: its own identifier scheme, IDs shown
// under another label or only in the heading, article URLs that carry titles. The offline planner
// and a script model answer from it over http and https; a page that names two records is refused.
func TestWiki(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			pol, popts := wiki(t, scheme)
			origin := pol.Sites()[0].Origin
			cape, bell, sker := origin+"/wiki/Cape_Wrath_Lighthouse", origin+"/wiki/Bell_Rock_Lighthouse", origin+"/wiki/Skerryvore_Lighthouse"

			// The offline planner: the ID under the site's own label "Wiki ID".
			res := run(t, pol, popts, "How tall is WK-LH-017?", offline.New())
			want := map[string]string{"Wiki ID": "WK-LH-017", "Location": "Cape Wrath, Sutherland", "First lit": "1828", "Height": "20 m", "Designer": "Robert Stevenson"}
			if res.Status != coordinator.StatusAnswered || res.Answer == nil || !maps.Equal(res.Answer.Fields, want) || !slices.Equal(res.Answer.Sources, []string{cape}) {
				t.Fatalf("offline, WK-LH-017: got %s (%s) %+v\n\twant answered %v from %s", res.Status, res.Reason, res.Answer, want, cape)
			}

			// Titles that hold a verb or a write word are content: the offline planner searches,
			// opens /wiki/New_York_City and answers from it (issue 24).
			nyc := origin + "/wiki/New_York_City"
			res = run(t, pol, popts, "Look up WK-NY-202", offline.New())
			want = map[string]string{"Wiki ID": "WK-NY-202", "Country": "United States", "Founded": "1624", "Lighthouse": "Little Red Lighthouse"}
			if res.Status != coordinator.StatusAnswered || res.Answer == nil || !maps.Equal(res.Answer.Fields, want) || !slices.Equal(res.Answer.Sources, []string{nyc}) {
				t.Fatalf("offline, WK-NY-202: got %s (%s) %+v\n\twant answered %v from %s", res.Status, res.Reason, res.Answer, want, nyc)
			}

			// A script model: the ID only in the article's heading, found through the search.
			res = run(t, pol, popts, "Look up wk-lh-003", script(
				call(coordinator.ToolSearchSite, map[string]string{"query": "WK-LH-003"}),
				call(coordinator.ToolListLinks, map[string]any{}),
				call(coordinator.ToolOpenURL, map[string]int{"link": 1}),
				call(coordinator.ToolExtractFields, map[string]any{}),
				final(map[string]any{"record_id": "WK-LH-003", "fields": map[string]string{"Height": "35 m", "First lit": "1811"}, "sources": []string{bell}}),
			))
			if res.Status != coordinator.StatusAnswered || res.RecordID != "WK-LH-003" {
				t.Fatalf("script, WK-LH-003: got %s (%s), steps %+v; want answered", res.Status, res.Reason, res.Steps)
			}

			// Skerryvore's infobox names its sister light: the page shows two records' IDs and is
			// about neither, so an answer that cites it is refused.
			res = run(t, pol, popts, "Look up WK-LH-021", script(
				call(coordinator.ToolSearchSite, map[string]string{"query": "WK-LH-021"}),
				call(coordinator.ToolListLinks, map[string]any{}),
				call(coordinator.ToolOpenURL, map[string]int{"link": 1}),
				call(coordinator.ToolExtractFields, map[string]any{}),
				final(map[string]any{"record_id": "WK-LH-021", "fields": map[string]string{"Height": "48 m"}, "sources": []string{sker}}),
			))
			if wantReason := "unsupported answer: source " + sker + " is not about record WK-LH-021"; res.Status != coordinator.StatusBlocked || res.Reason != wantReason {
				t.Fatalf("script, WK-LH-021: got %s (%s); want blocked: %s", res.Status, res.Reason, wantReason)
			}
		})
	}
}

// TestWikiTasks: a task's shape is the wiki policy's, with its example in the errors.
func TestWikiTasks(t *testing.T) {
	pol, err := policy.Parse(PolicyYAML("http://127.0.0.1:8082"), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ task, want string }{
		{"Look up SYN-0042", `task rejected: no record ID; name one, e.g. "Look up WK-LH-017"`},
		{"Look up WK-LH-17", `task rejected: malformed record ID "WK-LH-17"; record IDs are WK-, two letters, a dash and three digits, e.g. WK-LH-017`},
		{"Compare WK-LH-017 and WK-LH-003", "task rejected: more than one record ID (WK-LH-017, WK-LH-003); name exactly one"},
	}
	for _, tt := range tests {
		// Rejected before any browser work: the fake browser is never asked for anything.
		b := browsertest.NewPages(nil)
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: tt.task, Model: offline.New(), Browser: b})
		if res.Status != coordinator.StatusRejected || res.Reason != tt.want || len(b.Calls()) != 0 {
			t.Errorf("Run(%q):\n\tgot  %s: %s (browser calls %v)\n\twant rejected: %s", tt.task, res.Status, res.Reason, b.Calls(), tt.want)
		}
	}
}

// TestWikiOfflineFake runs the offline planner over every article with the HTTP fake browser: the
// planner and the answer check depend on what the pages show, not on the demo's routes or labels.
func TestWikiOfflineFake(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	pol, err := policy.Parse(PolicyYAML(srv.URL), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id     string
		status coordinator.Status
		source string
	}{
		{"WK-LH-017", coordinator.StatusAnswered, "/wiki/Cape_Wrath_Lighthouse"},
		{"WK-LH-003", coordinator.StatusAnswered, "/wiki/Bell_Rock_Lighthouse"},
		{"WK-PO-101", coordinator.StatusAnswered, "/wiki/Post_office"}, // titles with a verb: content
		{"WK-NY-202", coordinator.StatusAnswered, "/wiki/New_York_City"},
		{"WK-DK-303", coordinator.StatusAnswered, "/wiki/Delete_key"},
		{"WK-LH-021", coordinator.StatusBlocked, ""}, // its page names another record: nothing to cite
		{"WK-LH-999", coordinator.StatusBlocked, ""}, // no such article
	}
	for _, tt := range tests {
		res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up " + tt.id, Model: offline.New(), Browser: browsertest.NewHTTP(pol)})
		if res.Status != tt.status || tt.source != "" && (res.Answer == nil || !slices.Equal(res.Answer.Sources, []string{srv.URL + tt.source})) {
			t.Errorf("%s: got %s (%s) %+v; want %s from %q", tt.id, res.Status, res.Reason, res.Answer, tt.status, tt.source)
		}
	}
}
