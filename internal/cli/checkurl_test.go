package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command line and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckURLAgainstEmbeddedPolicy(t *testing.T) {
	const site = "http://127.0.0.1:8081"
	tests := []struct {
		name, method, url string
		verdict, reason   string
		rule              string // when set, the rule printed
	}{
		{"read route record", "", site + "/records/SYN-0042", "allow", "allowed read route", ""},
		{"read route search", "", site + "/search?q=SYN-0042", "allow", "allowed read route", ""},
		{"read route source b", "", site + "/sources/b/SYN-0042", "allow", "allowed read route", ""},
		{"read route home", "", site + "/", "allow", "allowed read route", ""},
		{"read route login page", "", site + "/login", "allow", "allowed read route", ""},
		{"userinfo", "", "http://user:pw@127.0.0.1:8081/", "deny", "userinfo not allowed", ""},
		{"userinfo naming the site before the real host", "", "http://127.0.0.1:8081@evil.example/", "deny", "userinfo not allowed", ""},
		{"backslash host confusion", "", `http://evil.example\@127.0.0.1:8081/records/SYN-1`, "deny", "host not allowed", ""},
		{"decimal ipv4 of another host", "", "http://2130706434:8081/", "deny", "host not allowed", ""},
		{"hex ipv4 of another host", "", "http://0x7f.0.0.2:8081/", "deny", "host not allowed", ""},
		{"octal ipv4 of another host", "", "http://017700000002:8081/", "deny", "host not allowed", ""},
		{"another port", "", "http://127.0.0.1:8082/mutations", "deny", "port not allowed", ""},
		{"encoded dot segments to a write route", "", site + "/sources/%2e%2E/records/SYN-0001/delete?confirm=yes", "deny", "write word in url", ""},
		{"encoded write word", "", site + "/records/SYN-0001/%64%65lete", "deny", "write word in url", ""},
		{"get delete route", "", site + "/records/SYN-0001/delete?confirm=yes", "deny", "write word in url", ""},
		{"post edit", "POST", site + "/records/SYN-0001/edit", "deny", "write method", ""},
		{"post login", "POST", site + "/login", "deny", "write method", ""},
		{"redirect chain start", "", site + "/go/3", "deny", "no rule matched", ""},
		{"ws", "", "ws://127.0.0.1:8081/", "deny", "scheme not allowed", ""},
		{"wss", "", "wss://127.0.0.1:8081/", "deny", "scheme not allowed", ""},
		{"data", "", "data:text/html,hi", "deny", "scheme not allowed", ""},
		{"blob", "", "blob:http://127.0.0.1:8081/1", "deny", "scheme not allowed", ""},
		{"file", "", "file:///etc/passwd", "deny", "scheme not allowed", ""},
		{"javascript", "", "javascript:alert(1)", "deny", "scheme not allowed", ""},
		{"about", "", "about:blank", "deny", "scheme not allowed", ""},
		{"view-source", "", "view-source:" + site + "/", "deny", "scheme not allowed", ""},
		{"chrome", "", "chrome://version", "deny", "scheme not allowed", ""},
		// Issue 11: segments are segments, parameters are part of the route, write stems.
		{"sign-in redirect target", "", site + "/login?next=/records/SYN-0013", "allow", "allowed read route", site + " read /login?next={path}"},
		{"encoded slash in a route parameter", "", site + "/records/..%2Fadmin", "deny", "unsafe path segment", "path segment 2 holds an encoded / or \\"},
		{"dot dot semicolon", "", site + "/sources/b/..;/admin", "deny", "unsafe path segment", "path segment 3 holds a ; parameter"},
		{"double encoded dot segment", "", site + "/records/%252e%252e", "deny", "unsafe path segment", "path segment 2 decodes to a dot segment"},
		{"parameter no route names", "", site + "/records/SYN-0042?public=1", "deny", "query parameter not allowed", site + " read /records/{id}: query parameter not named by the route"},
		{"secret in an extra search parameter", "", site + "/search?q=SYN-0042&d=secret", "deny", "query parameter not allowed", ""},
		{"deleteall", "", site + "/records/deleteall", "deny", "write word in url", `write word "delete" in path`},
		// Issue 24: the search query is free text, a write word there a word searched for; the rule
		// says which part was read as a command, and by which rule.
		{"deleterecord searched for", "", site + "/search?q=deleterecord", "allow", "allowed read route", site + " read /search?q={query}"},
		{"post office hours searched for", "", site + "/search?q=post+office+hours", "allow", "allowed read route", site + " read /search?q={query}"},
		{"action parameter smuggled into a search", "", site + "/search?q=x%26action%3Ddelete", "deny", "write word in url",
			`write word "delete" in query value: ?q={query} of /search?q={query} is text, where only an action parameter inside it is a command`},
		{"write word in an identifier, explained", "", site + "/records/deleteall", "deny", "write word in url",
			`write word "delete" in path segment 2: {id} of /records/{id} is an identifier, where a write word is a command (write {id:text} if it holds titles or free text)`},
		{"purgeall", "", site + "/records/purgeall", "deny", "write word in url", `write word "purge" in path`},
		{"unpublish", "", site + "/records/unpublish", "deny", "write word in url", `write word "unpublish" in path`},
		{"close", "", site + "/records/close", "deny", "write word in url", `write word "close" in path`},
		{"four layers of encoding", "", site + "/records/%25252564elete", "deny", "write word in url", `write word "delete" in path`},
		{"five layers of encoding", "", site + "/records/%2525252564elete", "deny", "write word in url", "percent-encoded beyond 4 decodings in path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"check-url"}
			if tt.method != "" {
				args = append(args, "--method", tt.method)
			}
			code, out, errOut := runCLI(t, append(args, tt.url)...)
			var got checkResult
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("check-url %s: stdout is not one JSON object: %v\n%s\nstderr: %s", tt.url, err, out, errOut)
			}
			// A rule begins with the part a case names (write detection adds the position and rule).
			if tt.rule != "" && !strings.HasPrefix(got.Rule, tt.rule) {
				t.Errorf("check-url %s: rule got %q, want %q", tt.url, got.Rule, tt.rule)
			}
			if got.Verdict.String() != tt.verdict || got.Reason != tt.reason {
				t.Errorf("check-url %s:\n\tgot  %s %q (rule %q)\n\twant %s %q", tt.url, got.Verdict, got.Reason, got.Rule, tt.verdict, tt.reason)
			}
			wantCode := ExitOK
			if tt.verdict == "deny" {
				wantCode = ExitBlocked
			}
			if code != wantCode {
				t.Errorf("check-url %s: exit code got %d, want %d", tt.url, code, wantCode)
			}
			if strings.Contains(out, "pw@") {
				t.Errorf("check-url printed a password: %s", out)
			}
		})
	}
}

func TestCheckURLManyAndPolicyFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nsites:\n  - origin: https://docs.example.org\n    read: [\"/guide/{page}\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "check-url", "https://docs.example.org/guide/a", "--policy", file, "https://docs.example.org/guide/a/b")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("check-url with two URLs: got %d lines, want 2:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], `"verdict":"allow"`) || !strings.Contains(lines[1], `"reason":"no rule matched"`) {
		t.Errorf("check-url lines:\n%s", out)
	}
	if code != ExitBlocked {
		t.Errorf("exit code: got %d, want %d", code, ExitBlocked)
	}
}

func TestCheckURLUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no url", []string{"check-url"}, "no URL given"},
		{"missing policy file", []string{"check-url", "--policy", "/nonexistent/p.yaml", "http://a/"}, "/nonexistent/p.yaml"},
		{"bad method", []string{"check-url", "--method", "G T", "http://a/"}, "is not an HTTP method"},
		{"unknown flag", []string{"check-url", "--bogus", "http://a/"}, "flag provided but not defined: -bogus"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != ExitUsage {
				t.Errorf("%v: exit code got %d, want %d", tt.args, code, ExitUsage)
			}
			if out != "" {
				t.Errorf("%v: printed to stdout: %q", tt.args, out)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("%v: stderr:\n\tgot  %q\n\twant it to contain %q", tt.args, errOut, tt.wantErr)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	code, out, _ := runCLI(t, "policy", "validate", "../../policy/testdata/demo.yaml")
	if code != ExitOK || !strings.Contains(out, "valid: 2 site(s)") {
		t.Errorf("policy validate demo.yaml: code %d, out %q", code, out)
	}
	// Each variable with its kind and where the kind comes from.
	for _, line := range []string{
		"/records/{id}                {id}                   id    (default for the name): an identifier",
		"/sources/*                   *                      path  (default for *): the rest of the path",
		"/search?q={query}            ?q={query}             text  (search query): free text",
		"/guide/{page}                {page}                 id    (default for the name)",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("policy validate demo.yaml: no line %q in\n%s", line, out)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte("version: 1\nsites:\n  - origin: https://en.wikipedia.org\n    read: ['/wiki/{title}', '/w/index.php?title={name:text}&action={action}', '/{owner}/{repo:text}/blob/*:text']\n"), 0o600)
	code, out, _ = runCLI(t, "policy", "validate", file)
	for _, line := range []string{
		"/wiki/{title}                {title}                text  (default for the name)",
		"{name:text}&action={action} ?action={action}       id    (action parameter): names an action",
		"?title={name}          text  (written)",
		"{owner}                id    (default for the name)",
		"{repo}                 text  (written)",
		"*                      text  (written)",
	} {
		if code != ExitOK || !strings.Contains(out, line) {
			t.Errorf("policy validate: code %d, no line %q in\n%s", code, line, out)
		}
	}
	// A kind that is neither, and text on an action parameter, are errors naming the route.
	os.WriteFile(file, []byte("version: 1\nsites:\n  - origin: https://en.wikipedia.org\n    read: ['/wiki/{title:prose}']\n"), 0o600)
	if code, _, errOut := runCLI(t, "policy", "validate", file); code != ExitUsage || !strings.Contains(errOut, `kind "prose" must be id`) {
		t.Errorf("policy validate {title:prose}: code %d, stderr %q", code, errOut)
	}
	os.WriteFile(file, []byte("version: 1\nsites:\n  - origin: https://en.wikipedia.org\n    read: ['/w/index.php?action={a:text}']\n"), 0o600)
	if code, _, errOut := runCLI(t, "policy", "validate", file); code != ExitUsage || !strings.Contains(errOut, `parameter "action" names an action`) {
		t.Errorf("policy validate action={a:text}: code %d, stderr %q", code, errOut)
	}
	code, out, errOut := runCLI(t, "policy", "validate", "../../policy/testdata/bad_route_relative.yaml")
	want := `bad_route_relative.yaml:6: sites[0].read[1]: route "records/{id}" must start with /`
	if code != ExitUsage || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("policy validate bad file: code %d, out %q, stderr %q; want code 2 and %q", code, out, errOut, want)
	}
	if code, _, _ := runCLI(t, "policy", "frob"); code != ExitUsage {
		t.Errorf("policy frob: code %d, want 2", code)
	}
}
