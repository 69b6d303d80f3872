package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/internal/wall"
	"github.com/browser-agent/browser-agent/policy"
)

// wallProbe says whether a network namespace can be made here (tests replace it).
var wallProbe = wall.Probe

// browser is the Chromium the guard launched behind the wall, which the upstream drives over CDP.
type browser struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	socket   string // the DevTools socket, in the guard's own directory
	profile  string
	endpoint string // the upstream's --cdp-endpoint: ws+unix://socket:/devtools/browser/<id>
	pid      int    // Chromium's browser process
	cdp      *cdpConn
	stderr   *tail
}

// planWall decides whether the guard launches its own browser behind the wall: the policy's
// wall key, else cfg.Wall, else auto. Required where no namespace can be made is an error; off,
// or auto where none can be made, leaves the browser to the upstream (behind the proxy only), and
// the returned line says why.
func (g *Guard) planWall() (kind wall.Kind, status string, err error) {
	mode := g.cfg.Policy.Wall()
	if mode == "" {
		mode = g.cfg.Wall
	}
	if mode == "" {
		mode = policy.WallAuto
	}
	if mode == policy.WallOff {
		return "", "off: turned off (wall: off)", nil
	}
	a := wallProbe()
	if a.Err != nil {
		if mode == policy.WallRequired {
			return "", "", &bridge.SetupError{What: "the wall (a network namespace for the guard's Chromium)",
				Problem: "is required (wall: required) but cannot be made here", Err: a.Err, Fix: bridge.FixWall}
		}
		return "", "off: " + a.Err.Error(), nil
	}
	return a.Kind, a.Status(), nil
}

// launchBrowser starts the bridge's Chromium in a network namespace of its own (internal/wall),
// behind the guard's egress proxy, its DevTools endpoint on a unix socket in the guard's
// directory only, and checks that the browser answering there is the one it launched.
func (g *Guard) launchBrowser(ctx context.Context, kind wall.Kind) (*browser, error) {
	chromium := g.cfg.Chromium
	if chromium == "" {
		var err error
		if chromium, err = bridge.ChromiumPath(); err != nil {
			return nil, err
		}
	}
	b := &browser{socket: filepath.Join(g.dir, "devtools.sock"), profile: filepath.Join(g.dir, "profile"), stderr: &tail{max: 4096}, exited: make(chan struct{})}
	if err := os.Mkdir(b.profile, 0o700); err != nil {
		return nil, err
	}
	exe, wargs, err := wall.DevToolsCommand(kind, chromium, g.px.Addr(), b.socket)
	if err != nil {
		return nil, err
	}
	args := append(append(append(bridge.LaunchArgs(), g.px.ChromiumArgs()...), g.cfg.ChromiumArgs...),
		"--headless", "--hide-scrollbars", "--mute-audio", "--user-data-dir="+b.profile)
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium as root runs only without its sandbox
	}
	args = append(append(args, wargs...), "about:blank")
	b.cmd = exec.Command(exe, args...)
	b.cmd.Stdout, b.cmd.Stderr = b.stderr, b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch the guard's Chromium: %w", err)
	}
	go func() { b.cmd.Wait(); close(b.exited) }()
	if err := b.attach(ctx); err != nil {
		b.close()
		return nil, fmt.Errorf("the guard's Chromium: %w", err)
	}
	return b, nil
}

// attach waits for DevTools on the socket, connects the guard's own CDP session, and checks the
// browser behind it: its process a descendant of this one, on this launch's fresh profile, in a
// network namespace whose only interface is lo.
func (b *browser) attach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	hc := unixHTTP(b.socket)
	var ws string
	for ws == "" {
		select {
		case <-b.exited:
			return fmt.Errorf("exited during launch: %s", strings.TrimSpace(b.stderr.String()))
		case <-ctx.Done():
			return fmt.Errorf("no DevTools endpoint: %w", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
		resp, err := hc.Get("http://localhost/json/version")
		if err != nil {
			continue
		}
		var v struct {
			WS string `json:"webSocketDebuggerUrl"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err == nil {
			ws = v.WS
		}
	}
	hc.CloseIdleConnections()
	u, err := url.Parse(ws)
	if err != nil || !strings.HasPrefix(u.Path, "/devtools/browser/") {
		return fmt.Errorf("DevTools answered with no browser endpoint (%q)", ws)
	}
	b.endpoint = "ws+unix://" + b.socket + ":" + u.Path
	if b.cdp, err = dialCDP(ctx, b.socket, u.Path); err != nil {
		return fmt.Errorf("DevTools: %w", err)
	}
	var info struct {
		ProcessInfo []struct {
			Type string `json:"type"`
			ID   int    `json:"id"`
		} `json:"processInfo"`
	}
	if err := b.cdp.call(ctx, "", "SystemInfo.getProcessInfo", nil, &info); err != nil {
		return err
	}
	for _, pi := range info.ProcessInfo {
		if pi.Type == "browser" {
			b.pid = pi.ID
		}
	}
	return b.verify()
}

// verify checks the browser process the guard's CDP session reports.
func (b *browser) verify() error {
	if b.pid <= 0 {
		return errors.New("no browser process reported over DevTools")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", b.pid, err)
	}
	if !strings.Contains(string(cmdline), "--user-data-dir="+b.profile+"\x00") {
		return fmt.Errorf("pid %d does not use the guard's profile: not the browser it launched", b.pid)
	}
	if !bridge.IsDescendant(b.pid, os.Getpid()) {
		return fmt.Errorf("pid %d is not a child of the guard: not the browser it launched", b.pid)
	}
	return wall.Verify(b.pid)
}

// close stops the browser: its launch's process group, then the profile.
func (b *browser) close() error {
	if b == nil || b.cmd == nil || b.cmd.Process == nil {
		return nil
	}
	b.cdp.Close()
	pg := -b.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(pg, syscall.SIGKILL)
		<-b.exited
	}
	_ = syscall.Kill(pg, syscall.SIGKILL) // what of the group outlived its parent
	return nil
}

// tail keeps the last max bytes written to it: the browser's last words for a launch error.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tail)(nil)

// targetInfo is one target of the guard's browser (a page, a frame of another process, a worker)
// as Target.getTargets lists it.
type targetInfo struct {
	ID   string `json:"targetId"`
	Type string `json:"type"`
	URL  string `json:"url"`
}

// targets are the targets of the guard's browser, as its CDP session sees them.
func (b *browser) targets(ctx context.Context) ([]targetInfo, error) {
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := b.cdp.call(ctx, "", "Target.getTargets", nil, &r); err != nil {
		return nil, err
	}
	return r.TargetInfos, nil
}

// pageURLs are the URLs of the pages open in the guard's own browser (its CDP session's view).
func (b *browser) pageURLs(ctx context.Context) ([]string, error) {
	tis, err := b.targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ti := range tis {
		if ti.Type == "page" {
			out = append(out, ti.URL)
		}
	}
	return out, nil
}

// frameJS describes the filled editable elements of one frame's document and the open shadow
// roots under it (its frames are read in worlds of their own).
const frameJS = `(() => { ` + describeJS + `
  const out = [];
  const stack = [document];
  while (stack.length && out.length < 500) {
    const root = stack.pop();
    for (const el of root.querySelectorAll('input, textarea, select, [contenteditable], [role=textbox], [role=searchbox], [role=spinbutton], [role=combobox]')) {
      const d = D(el); if (d.filled) out.push(d);
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) stack.push(el.shadowRoot);
  }
  return out;
})()`

// worldName is the guard's isolated world in each frame: the page's script does not run there,
// so what it changed of its own world's DOM objects and functions (a value getter, a
// querySelectorAll that hides a field) does not change what the guard reads.
const worldName = "browser-agent-guard"

// filledFields are the filled editable fields of every frame of every page in the guard's
// browser, each frame read in the guard's isolated world (frameJS), never in the page's world.
// A frame that cannot be read is an error: the caller withholds.
func (b *browser) filledFields(ctx context.Context) ([]field, error) { return b.fields(ctx, false) }

// fields are the filled editable fields (all: every editable field) of every frame of every
// page, read as filledFields reads them.
func (b *browser) fields(ctx context.Context, all bool) ([]field, error) {
	expr := frameJS
	if all {
		expr = allFields(frameJS)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return readAll[field](ctx, b, expr)
}

// readAll evaluates expr, which answers a list of T, in the guard's isolated world of every frame
// of every page (targetRead), and joins the lists.
func readAll[T any](ctx context.Context, b *browser, expr string) ([]T, error) {
	tis, err := b.targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, ti := range tis {
		if ti.Type != "page" && ti.Type != "iframe" {
			continue
		}
		ts, err := targetRead[T](ctx, b, ti.ID, expr)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

// frameTree is Page.getFrameTree's answer, as far as the guard reads it.
type frameTree struct {
	Frame struct {
		ID string `json:"id"`
	} `json:"frame"`
	Children []frameTree `json:"childFrames"`
}

func (t frameTree) ids() []string {
	out := []string{t.Frame.ID}
	for _, c := range t.Children {
		out = append(out, c.ids()...)
	}
	return out
}

// targetRead evaluates expr, which answers a list of T, in the guard's isolated world of every
// frame of one target, and joins the lists.
func targetRead[T any](ctx context.Context, b *browser, target, expr string) ([]T, error) {
	var att struct {
		Session string `json:"sessionId"`
	}
	if err := b.cdp.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att); err != nil {
		if strings.Contains(err.Error(), "No target with given id") {
			return nil, nil // closed since it was listed
		}
		return nil, err
	}
	defer b.cdp.call(context.WithoutCancel(ctx), "", "Target.detachFromTarget", map[string]any{"sessionId": att.Session}, nil)
	var tree struct {
		Tree frameTree `json:"frameTree"`
	}
	if err := b.cdp.call(ctx, att.Session, "Page.getFrameTree", nil, &tree); err != nil {
		return nil, err
	}
	var out []T
	for i, id := range tree.Tree.ids() {
		var w struct {
			Context int `json:"executionContextId"`
		}
		if err := b.cdp.call(ctx, att.Session, "Page.createIsolatedWorld", map[string]any{"frameId": id, "worldName": worldName}, &w); err != nil {
			if i > 0 {
				continue // a frame of another process: read through its own target
			}
			return nil, err
		}
		var ev struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
			Exception *struct {
				Text string `json:"text"`
			} `json:"exceptionDetails"`
		}
		if err := b.cdp.call(ctx, att.Session, "Runtime.evaluate", map[string]any{
			"expression": expr, "contextId": w.Context, "returnByValue": true,
		}, &ev); err != nil {
			return nil, err
		}
		if ev.Exception != nil {
			return nil, fmt.Errorf("the guard's field reader failed: %s", ev.Exception.Text)
		}
		var v []T
		if len(ev.Result.Value) > 0 && string(ev.Result.Value) != "null" {
			if err := json.Unmarshal(ev.Result.Value, &v); err != nil {
				return nil, fmt.Errorf("the guard's reader answered %v", err)
			}
		}
		out = append(out, v...)
	}
	return out, nil
}
