package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/startup"
)

// check is one line of doctor: a part, what the binary would use, whether it works, and the fix
// when it does not.
type check struct {
	Part string `json:"part"`
	OK   bool   `json:"ok"`
	Uses string `json:"uses"`            // what the binary would use, with its version
	Err  string `json:"error,omitempty"` // why it does not work
	Fix  string `json:"fix,omitempty"`
}

// doctorCmd is "browser-agent doctor [--policy FILE] [--db FILE] [--json]": what a run would use
// (the driver, node, Chromium, the audit store, the policy) and whether each works, by using it as
// a run does (the driver is started, a Chromium launched and closed, the store opened). Exit 1
// when any part fails; each failure says what fixes it.
func doctorCmd(e *env, args []string) error {
	fs := newFlags(e, "doctor", "[--policy FILE] [--db FILE] [--json] | --chromium-version")
	polFile := fs.String("policy", "", "policy file to check (default: the embedded demo-site policy)")
	dbFile := dbFlag(fs, new(string), "audit database", false)
	asJSON := fs.Bool("json", false, "print the checks as one JSON object")
	onlyVersion := fs.Bool("chromium-version", false, "print only the Chromium a run would use, its version, and whether the suite has run green on it (no launch)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *onlyVersion {
		return chromiumVersion(e)
	}
	ctx, sigs, stop := watchSignals(e.stderr)
	defer stop()
	initStartup(e)

	checks := doctorChecks(ctx, e, *polFile, *dbFile)
	if sigs.Received() {
		return &ExitError{Code: sigs.Code(), Err: errors.New("interrupted")}
	}
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"ok": failed == 0, "checks": checks}); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			verdict := "ok  "
			if !c.OK {
				verdict = "FAIL"
			}
			fmt.Fprintf(e.stdout, "%s %-12s %s\n", verdict, c.Part, c.Uses)
			if !c.OK {
				fmt.Fprintf(e.stdout, "     %-12s %s\n", "", c.Err)
				fmt.Fprintf(e.stdout, "     %-12s fix: %s\n", "", c.Fix)
			}
		}
	}
	if failed > 0 {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d of %d checks failed", failed, len(checks))}
	}
	return nil
}

// doctorChecks runs the checks in the order a run uses the parts.
func doctorChecks(ctx context.Context, e *env, polFile, dbFile string) []check {
	var out []check
	out = append(out, checkStore(ctx, e, dbFile), checkPolicy(ctx, polFile))
	drv, rt := checkDriver(ctx)
	out = append(out, drv, checkNode(ctx))
	out = append(out, checkChromium(ctx, rt))
	if rt != nil {
		rt.Close()
	}
	return out
}

// fail fills c's failure from err. A setup error of the bridge (the driver, node, Chromium) says
// its own fix; fix is for the others.
func (c check) fail(err error, fix string) check {
	c.OK, c.Err, c.Fix = false, err.Error(), fix
	var se interface {
		Failure() string
		Remedy() string
	}
	if errors.As(err, &se) {
		c.Err, c.Fix = se.Failure(), se.Remedy()
	}
	c.Fix = strings.TrimSuffix(c.Fix, "; "+fixDoctor) // this is doctor
	return c
}

func checkStore(ctx context.Context, e *env, path string) check {
	if path == "" {
		path = audit.DefaultPath()
	}
	c := check{Part: "audit store", Uses: path}
	s, err := openStoreBounded(ctx, e, path)
	if err != nil {
		return c.fail(err, "make "+filepath.Dir(path)+" writable or give another --db (or set BROWSER_AGENT_DB)")
	}
	s.Close()
	c.OK = true
	return c
}

func checkPolicy(ctx context.Context, file string) check {
	if file == "" {
		pol, err := loadPolicy("", DefaultDemoOrigin)
		c := check{Part: "policy", Uses: "the embedded demo-site policy (run --policy FILE for another)"}
		if err != nil {
			return c.fail(err, "rebuild the binary")
		}
		c.OK = pol != nil
		return c
	}
	c := check{Part: "policy", Uses: file}
	if _, err := loadPolicyFile(ctx, file); err != nil {
		return c.fail(err, "fix the file as the error says (browser-agent policy validate "+file+") or give another --policy")
	}
	c.OK = true
	return c
}

// checkDriver finds the driver and starts it, as a run does; rt is the started driver, nil when
// it did not start.
func checkDriver(ctx context.Context) (check, *bridge.Runtime) {
	c := check{Part: "driver", Uses: "none found"}
	dir, err := bridge.DriverDir()
	if err != nil {
		return c.fail(err, ""), nil
	}
	c.Uses = dir
	var pkg struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(dir, "package", "package.json")); err == nil && json.Unmarshal(b, &pkg) == nil {
		c.Uses += " (playwright-core " + pkg.Version + ")"
	}
	sctx, cancel := context.WithTimeout(ctx, startup.Timeout())
	defer cancel()
	// The Chromium check is its own line: the driver starts with any executable as Chromium.
	rt, err := bridge.NewRuntimeContext(sctx, bridge.WithChromium("/bin/true"))
	if err != nil {
		return c.fail(err, ""), nil
	}
	c.OK = true
	return c, rt
}

// checkNode runs the node the driver would use with --version.
func checkNode(ctx context.Context) check {
	c := check{Part: "node"}
	node := os.Getenv("PLAYWRIGHT_NODEJS_PATH")
	if node == "" {
		dir, err := bridge.DriverDir()
		if err != nil {
			var se *bridge.SetupError
			if errors.As(err, &se) && se.What == "node" {
				c.Uses = strings.Join(se.Looked, ", ")
				return c.fail(err, "")
			}
			c.Uses = "unknown: no driver found"
			return c.fail(errors.New("node is looked for in the driver's directory"), "fix the driver first")
		}
		node = filepath.Join(dir, "node")
	}
	c.Uses = node
	v, err := version(ctx, node, "--version")
	if err != nil {
		return c.fail(err, bridge.FixNode)
	}
	c.Uses += " (" + v + ")"
	c.OK = true
	return c
}

// checkChromium runs Chromium with --version and, when the driver started, launches it headless
// as a run does and closes it.
func checkChromium(ctx context.Context, rt *bridge.Runtime) check {
	c := check{Part: "chromium"}
	path, err := bridge.ChromiumPath()
	if err != nil {
		c.Uses = os.Getenv(bridge.EnvChromium)
		if c.Uses == "" {
			c.Uses = bridge.DefaultChromium
		}
		return c.fail(err, "")
	}
	c.Uses = path
	v, err := version(ctx, path, "--version")
	if err != nil {
		return c.fail(err, bridge.FixChromium)
	}
	c.Uses += " (" + v + "; " + suiteVerdict(v) + ")"
	if rt == nil {
		return c.fail(errors.New("not launched: the driver did not start"), "fix the driver first")
	}
	pol, err := loadPolicy("", DefaultDemoOrigin)
	if err != nil {
		return c.fail(err, "rebuild the binary")
	}
	lctx, cancel := context.WithTimeout(ctx, startup.Timeout())
	defer cancel()
	s, err := rt.Launch(lctx, pol, bridge.WithChromium(path))
	if err != nil {
		return c.fail(err, "")
	}
	wall := s.Wall()
	s.Close()
	c.Uses += ", launches; wall " + wall // on: how; off: why (docs/security.md, "The operating system's wall")
	c.OK = true
	return c
}

// chromiumVersion prints the Chromium a run would use, its version and suiteVerdict on one line
// (make test prints it: the suite says which Chromium it ran on).
func chromiumVersion(e *env) error {
	path, err := bridge.ChromiumPath()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	v, err := version(context.Background(), path, "--version")
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	fmt.Fprintf(e.stdout, "%s at %s (%s)\n", v, path, suiteVerdict(v))
	return nil
}

// version runs path args and returns the first line of its output, bounded by startup.Timeout.
func version(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, startup.Timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() == context.DeadlineExceeded {
		return "", fmt.Errorf("%s %s did not answer within %s", path, strings.Join(args, " "), startup.Timeout())
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", path, strings.Join(args, " "), err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}
