package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/policy"
	"github.com/mxschmitt/playwright-go"
)

// DriverVersion is the playwright-core version the driver directory must hold; it is the one
// playwright-go v0.6401.0 speaks to.
const DriverVersion = "1.64.1"

// SetupError says what is missing or broken to drive Chromium, where the bridge looked, and what
// fixes it. It matches ErrSetup. Error is the whole story (every place looked, the cause);
// StartReason is its one short line for a run's reason, with no browser log or command line in it.
type SetupError struct {
	What    string   // "playwright driver", "node" or "chromium"
	Problem string   // what is wrong with it; "" means "not found"
	Looked  []string // where the bridge looked
	Where   string   // Looked said shortly, for StartReason; "" means "at " the first of Looked
	Err     error
	Fix     string // the command or setting that fixes it; "" means the default for What
}

func (e *SetupError) problem() string {
	if e.Problem == "" {
		return "not found"
	}
	return e.Problem
}

func (e *SetupError) Error() string { return e.Failure() + "; fix: " + e.Remedy() }

// Failure is Error without the fix: the part, what is wrong, every place looked, the cause.
func (e *SetupError) Failure() string {
	msg := e.What + " " + e.problem()
	if len(e.Looked) > 0 {
		msg += " (looked in " + strings.Join(e.Looked, ", ") + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Remedy is the fix: the command or setting that makes the part work.
func (e *SetupError) Remedy() string { return e.fix() }

// StartReason is the error in one short line: the part, what is wrong, where, and the fix
// (coordinator.LaunchReason keeps it whole; the audit store keeps 200 bytes of a reason).
func (e *SetupError) StartReason() string {
	where := e.Where
	if where == "" && len(e.Looked) > 0 {
		where = "at " + e.Looked[0]
	}
	msg := e.What + " " + e.problem()
	if where != "" {
		msg += " " + where
	}
	return msg + "; " + e.fix()
}

func (e *SetupError) fix() string {
	switch {
	case e.Fix != "":
		return e.Fix
	case e.What == "chromium":
		return FixChromium
	default:
		return FixDriver
	}
}

// The fixes of a missing or broken part, short enough for a run's reason.
const (
	FixDriver   = "run scripts/setup, set " + EnvDriverDir + "; see browser-agent doctor"
	FixNode     = "install Node.js 20+, run scripts/setup or set PLAYWRIGHT_NODEJS_PATH; see browser-agent doctor"
	FixVersion  = "run scripts/setup in its checkout; see browser-agent doctor"
	FixChromium = "install chromium-headless-shell (scripts/setup) or set " + EnvChromium + "; see browser-agent doctor"
)

// Unwrap lets errors.Is match ErrSetup and the underlying cause.
func (e *SetupError) Unwrap() []error { return []error{ErrSetup, e.Err} }

// Runtime is a running Playwright driver. Starting it is slow (a Node process), so one Runtime can
// launch many Sessions, each with its own Chromium. It is safe for concurrent use.
type Runtime struct {
	cfg config
	pw  *playwright.Playwright

	mu     sync.Mutex
	closed bool
}

// NewRuntime finds the driver and Chromium and starts the driver. It never downloads anything.
// A driver that does not answer within DefaultStartTimeout is stopped and is an error.
func NewRuntime(opts ...Option) (*Runtime, error) {
	return NewRuntimeContext(context.Background(), opts...)
}

// DefaultStartTimeout bounds the start of the driver when the context of NewRuntimeContext has
// no deadline.
const DefaultStartTimeout = 60 * time.Second

// NewRuntimeContext is NewRuntime bounded by ctx: when ctx ends, or its deadline (else
// DefaultStartTimeout) passes, before the driver answers, the driver's processes are killed and
// the error says so (ctx's cause when ctx was canceled). It returns only once nothing it started
// runs.
func NewRuntimeContext(ctx context.Context, opts ...Option) (*Runtime, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	dir, err := findDriverDir(cfg.driverDir)
	if err != nil {
		return nil, err
	}
	cfg.driverDir = dir
	if cfg.chromium, err = findChromium(cfg.chromium); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	w := &logWriter{logf: cfg.logf, prefix: "driver: "}
	pw, err := startDriverContext(ctx, dir, &playwright.RunOptions{
		DriverDirectory:     dir,
		SkipInstallBrowsers: true,
		Verbose:             false,
		Stdout:              w,
		Stderr:              w,
		// A Logger keeps playwright-go from redirecting the standard logger to Stderr.
		Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, cfg.logf)
	if err != nil {
		var se *SetupError
		if errors.As(err, &se) || ctx.Err() == context.Canceled {
			return nil, err
		}
		return nil, &SetupError{What: "playwright driver", Problem: "did not start", Looked: []string{dir}, Err: err}
	}
	cfg.logf("bridge: driver %s started from %s, chromium %s", DriverVersion, dir, cfg.chromium)
	return &Runtime{cfg: cfg, pw: pw}, nil
}

// Close stops the driver. Sessions launched from the Runtime stop with it.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	rt.mu.Unlock()
	if err := rt.pw.Stop(); err != nil {
		return fmt.Errorf("stop driver: %w", err)
	}
	return nil
}

// Launch launches a dedicated Chromium for one session.
func (rt *Runtime) Launch(ctx context.Context, pol *policy.Policy, opts ...Option) (*Session, error) {
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("launch: %w", ErrClosed)
	}
	cfg := rt.cfg
	cfg.extraArgs = append([]string(nil), rt.cfg.extraArgs...)
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.chromium != rt.cfg.chromium {
		var err error
		if cfg.chromium, err = findChromium(cfg.chromium); err != nil {
			return nil, err
		}
	}
	return launch(ctx, rt, pol, cfg)
}

// findDriverDir resolves the driver directory: the option, $BROWSER_AGENT_DRIVER_DIR, driver/ in
// the current or the executable's directory or a parent of either, then the system directory.
func findDriverDir(opt string) (string, error) {
	var looked []string
	try := func(dir string) (string, error, bool) {
		if dir == "" {
			return "", nil, false
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		looked = append(looked, abs)
		if _, err := os.Stat(filepath.Join(abs, "package", "package.json")); err != nil {
			return "", err, false
		}
		return abs, checkDriverDir(abs), true
	}
	explicit := []struct{ dir, what string }{{opt, "WithDriverDir"}, {os.Getenv(EnvDriverDir), "$" + EnvDriverDir}}
	for _, e := range explicit {
		if e.dir == "" {
			continue
		}
		dir, err, ok := try(e.dir)
		if !ok {
			return "", driverError(looked, fmt.Errorf("%s: %w", e.what, err))
		}
		if err != nil {
			return "", driverError(looked, err)
		}
		return dir, nil
	}
	var starts, places []string
	if e := explicit[1]; e.dir == "" {
		places = append(places, "$"+EnvDriverDir+" (unset)")
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
		places = append(places, "driver/ in "+wd+" and its parents")
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
		places = append(places, "driver/ beside "+filepath.Dir(exe)+" and its parents")
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			if dir, err, ok := try(filepath.Join(d, "driver")); ok {
				if err != nil {
					return "", driverError(looked, err)
				}
				return dir, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if dir, err, ok := try(DefaultSystemDriverDir); ok {
		if err != nil {
			return "", driverError(looked, err)
		}
		return dir, nil
	}
	return "", &SetupError{What: "playwright driver", Looked: append(places, DefaultSystemDriverDir),
		Where: "in $" + EnvDriverDir + ", driver/ above cwd or binary, " + DefaultSystemDriverDir}
}

// driverError is the SetupError of a driver directory that was found but does not work: a
// SetupError of checkDriverDir (node, the version) gets where the bridge looked.
func driverError(looked []string, err error) error {
	var se *SetupError
	if errors.As(err, &se) {
		if len(se.Looked) == 0 {
			se.Looked = looked
		}
		return se
	}
	return &SetupError{What: "playwright driver", Looked: looked, Err: err}
}

// checkDriverDir checks the layout playwright.Run needs: package/cli.js of the pinned version and
// a node binary (driver/node or $PLAYWRIGHT_NODEJS_PATH).
func checkDriverDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "package", "cli.js")); err != nil {
		return fmt.Errorf("driver incomplete: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "package", "package.json"))
	if err != nil {
		return fmt.Errorf("driver incomplete: %w", err)
	}
	if !strings.Contains(string(data), `"version": "`+DriverVersion+`"`) {
		var pkg struct{ Version string }
		_ = json.Unmarshal(data, &pkg)
		return &SetupError{What: "playwright driver", Looked: []string{dir}, Fix: FixVersion,
			Problem: fmt.Sprintf("of another version (%s, need %s)", pkg.Version, DriverVersion)}
	}
	node := os.Getenv("PLAYWRIGHT_NODEJS_PATH")
	where := "PLAYWRIGHT_NODEJS_PATH"
	if node == "" {
		node, where = filepath.Join(dir, "node"), "the driver's node link"
	}
	if err := checkExecutable(node); err != nil {
		return &SetupError{What: "node", Looked: []string{node + " (" + where + ")"}, Where: "at " + node, Err: err, Fix: FixNode}
	}
	return nil
}

// chromiumCandidates are DefaultChromium and FallbackChromium (tests replace them).
var chromiumCandidates = []string{DefaultChromium, FallbackChromium}

// findChromium resolves the Chromium binary: the option, $BROWSER_AGENT_CHROMIUM, then the first
// of DefaultChromium and FallbackChromium that is an executable file.
func findChromium(opt string) (string, error) {
	path := opt
	if path == "" {
		path = os.Getenv(EnvChromium)
	}
	if path != "" {
		if err := checkExecutable(path); err != nil {
			return "", &SetupError{What: "chromium", Looked: []string{path}, Err: err}
		}
		return path, nil
	}
	var first error
	for _, path := range chromiumCandidates {
		err := checkExecutable(path)
		if err == nil {
			return path, nil
		}
		if first == nil {
			first = err
		}
	}
	return "", &SetupError{What: "chromium", Looked: chromiumCandidates,
		Where: "at " + strings.Join(chromiumCandidates, " or "), Err: first}
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// logWriter turns the driver's output into logf lines.
type logWriter struct {
	logf   func(string, ...any)
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(w.buf[:i])); line != "" {
			w.logf("%s%s", w.prefix, line)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

var _ io.Writer = (*logWriter)(nil)

// DriverDir returns the Playwright driver directory the bridge would use without WithDriverDir:
// $BROWSER_AGENT_DRIVER_DIR, driver/ in the current or the executable's directory or a parent of
// either, then the system directory. The error says to run scripts/setup.
func DriverDir() (string, error) { return findDriverDir("") }

// ChromiumPath returns the Chromium binary the bridge would use without WithChromium:
// $BROWSER_AGENT_CHROMIUM, else DefaultChromium, else FallbackChromium. The error says to run scripts/setup.
func ChromiumPath() (string, error) { return findChromium("") }
