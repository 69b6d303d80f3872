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
	// Nodes holds, for each element WithNodeTexts asked for (by frame, then backend node id)
	// that the proof found, the visible text of its own subtree and then that of each label
	// naming it (a field's label elements and aria-labelledby): the same proof's verdicts, one
	// element's text apart from every other's. An element not found (gone, or its frame not
	// read) is absent.
	Nodes map[string]map[int][]string
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
	for frame, rr := range reads {
		ids := cfg.nodes[frame]
		for i, texts := range rr.NodeTexts {
			if i >= len(ids) || texts == nil {
				continue
			}
			if out.Nodes == nil {
				out.Nodes = map[string]map[int][]string{}
			}
			if out.Nodes[frame] == nil {
				out.Nodes[frame] = map[int][]string{}
			}
			out.Nodes[frame][ids[i]] = texts
		}
	}
	return out, nil
}

// WithNodeTexts asks a proof (VisibleText) for the visible text of each of these elements, by
// the frame that holds it and its backend node id (Visible.Nodes): a caller that shows text of
// one element (an accessibility snapshot's line) proves it by that element, not by the page.
func WithNodeTexts(nodes map[string][]int) Option {
	return func(c *config) { c.nodes = nodes }
}

// WithPixelTime bounds the pixel phase of one proof (VisibleText) or read.
func WithPixelTime(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.pixelTime = d
		}
	}
}
