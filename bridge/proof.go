package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/mxschmitt/playwright-go"
)

// Visible is what rendering proved a person sees of a page (VisibleText).
type Visible struct {
	Text     string // the visible text of every frame the page shows, each child frame's where it sits
	Withheld int    // text runs not proven visible (hidden, not shown, or not decided in time)
	Decided  int    // text runs the pixel phase decided
}

// VisibleText proves by rendering which text of one page a person sees, as a read does
// (visibility.go: the page frozen, its clocks stopped, every frame laid out and shot, scroll
// containers and frames scrolled to show what they hide), on DevTools sessions the caller opened:
// the page's own first, then those of its out-of-process frames. It is the proof without the
// rest of a read: no route, no quiet wait, no credential check or watch (a page with a credential
// field is proven as any other; the caller checks fields), and no caret carried between
// reads: what the phase does not decide within its time (WithPixelTime's bound, else
// maxPixelTime) is withheld. A field's value is never read. The sessions are detached when it
// returns.
func VisibleText(ctx context.Context, sessions []CDPSession, opts ...Option) (Visible, error) {
	if len(sessions) == 0 {
		return Visible{}, errors.New("visible text: no session")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	pr := &pageReader{cfg: &cfg, world: "browser-agent-proof"}
	att := &attached{tried: map[playwright.Frame]bool{}, pr: pr}
	for _, s := range sessions {
		att.targets = append(att.targets, &target{sess: s})
	}
	defer att.close()
	if err := att.load(ctx); err != nil {
		return Visible{}, err
	}
	v := mapView(att)
	if v.mainID == "" {
		return Visible{}, errors.New("visible text: no main frame")
	}
	if err := freeze(ctx, v, "frozen"); err != nil {
		return Visible{}, err
	}
	defer thaw(ctx, v)
	pctx, cancel := context.WithTimeout(ctx, cfg.pixelTime)
	job, err := pr.pixelVerdicts(pctx, v, nil, 0)
	cancel()
	// One proof, no next read: what it did not decide is withheld (final).
	verdicts, whys, _ := job.verdictsOf(true, err == nil)
	if err != nil && ctx.Err() != nil {
		return Visible{}, err
	}
	reads := map[string]*rawRead{}
	if _, err := pr.readFrames(ctx, v, nil, verdicts, whys, reads, false); err != nil {
		return Visible{}, err
	}
	out := Visible{Decided: job.decided}
	for _, rr := range reads {
		out.Withheld += rr.Withheld
	}
	var links []rawLink
	var fields []Field
	out.Text = collapseBlankLines(pr.assemble(v.mainID, reads, &links, &fields, 0))
	return out, nil
}

// WithPixelTime bounds the pixel phase of one proof (VisibleText) or read.
func WithPixelTime(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.pixelTime = d
		}
	}
}
