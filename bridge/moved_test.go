package bridge

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
	"github.com/browser-agent/browser-agent/policy"
)

// TestVisibilityMovedUnderShots: the page lays itself out again between the measure of its runs
// and the shots (here the viewport narrowed, as a shot beyond the viewport resizes the view on
// some pages), with no change to its DOM for the tamper watch to see. A white marker on white
// sits below a long paragraph that, narrower, wraps onto more lines: its measured box then holds
// that paragraph's words, which D turns off. The check after the shots measures the group's runs
// again, and a group whose runs moved counts nothing: the marker must not be read. Controls: the
// marker shown is read; with the check off the hidden one is read (the attack is armed). Over
// http and https.
func TestVisibilityMovedUnderShots(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("visible words of a paragraph that wraps ", 60)
	marker := visMarker(96, false)
	page := func(color string) string {
		return `<!doctype html><body style="margin:0;background:#fff;font:16px/20px monospace"><p style="margin:0">` + words +
			`</p><p style="margin:0;color:` + color + `">` + marker + `</p><p style="margin:0">the end of the page</p></body>`
	}
	dir := t.TempDir()
	for _, color := range []string{"white", "black"} {
		if err := os.WriteFile(filepath.Join(dir, color+".html"), []byte(page(color)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain, secure, ca := testutil.ServeDir(t, dir) // closed after the parallel subtests
	for _, origin := range []string{plain.URL, secure.URL} {
		scheme := strings.SplitN(origin, ":", 2)[0]
		pol, err := policy.Parse([]byte(fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: [\"/*\"]\n", origin)), "moved")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			color  string
			noMove bool
			want   bool
		}{
			{name: "hidden marker, reflowed before the shots", color: "white"},
			{name: "control: shown marker", color: "black", want: true},
			{name: "control: hidden marker, check off", color: "white", noMove: true, want: true},
		} {
			t.Run(scheme+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				var s *Session
				var once sync.Once
				resize := func(ctx context.Context) error {
					var err error
					once.Do(func() { err = s.page.SetViewportSize(640, 720) })
					return err
				}
				opts := []Option{func(cfg *config) { cfg.beforeShots, cfg.noMoveCheck = resize, c.noMove }}
				if scheme == "https" {
					pool := x509.NewCertPool()
					pool.AddCert(ca)
					opts = append(opts, WithProxyRoots(pool))
				}
				var err error
				if s, err = testRT.Launch(ctxT(t), pol, opts...); err != nil {
					t.Fatalf("Launch: %v", err)
				}
				defer s.Close()
				if _, err := s.Open(ctxT(t), origin+"/"+c.color+".html"); err != nil {
					t.Fatalf("Open: %v", err)
				}
				text := readAll(t, s)
				if read := strings.Contains(text, marker); read != c.want {
					t.Errorf("marker read %v, want %v", read, c.want)
				}
				if !strings.Contains(text, "the end of the page") {
					t.Errorf("the page's last line not read: %q", text)
				}
			})
		}
	}
}
