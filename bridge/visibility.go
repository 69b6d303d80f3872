package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"math"
	"sort"
	"time"
)

// Visibility by rendering. A text run reaches the model only if drawing it changes pixels a
// person can see. With the page frozen (Page.setWebLifecycleState: no timers, tasks or
// observers run; Emulation.setScriptExecutionDisabled is not used because it renders <noscript>
// and so moves the layout between the shots), the reader lays the frame out and reports each run's boxes in page coordinates; the bridge shoots
// the page (A), makes the paint of all text transparent (fill, stroke, shadow, decoration, SVG
// fill) and shoots again (B), restores the paint and shoots a third time (A2). A pixel is drawn
// by a run when it lies in the run's boxes and in no other run's, did not change between A and
// A2 (animations, video) and differs between A and B. Then the reader reads the frame, in the same
// frozen state, with one verdict per run (and the credential check in that same evaluation).
//
// Known limits: pages of more than maxPixelNodes DOM nodes, child frames, runs scrolled away inside a scroll container, runs below
// maxShotHeight and pages whose shots take longer than maxPixelTime are decided by the reader's
// paint heuristics (display, visibility, opacity, clips, contrast against the nearest background
// colour), not by pixels. A pixel the paint-off style changes but no run drew (the text of a form
// control, generated content) is counted for a run whose box covers it alone. Whatever hides text (colour on a same-colour gradient,
// text drawn only by a shadow or stroke in the background colour, nested or filtered opacity,
// clip paths, masks, blend modes, an overlay on top) leaves no such pixel.
//
// Thresholds (measured on the corpus in visibility_test.go):
const (
	// pixelDelta is the least per-channel difference between A and B that counts a pixel as
	// drawn by text: below it the text is too faint to read against what is behind it (black at
	// opacity 0.12 on white gives 31).
	pixelDelta = 32
	// pixelStable is the most difference between A and A2 for a pixel to be compared at all.
	pixelStable = 8
	// minPixels is the least number of drawn pixels for a run to be visible.
	minPixels = 3
	// minRunHeight is the least height, in CSS px after transforms, of a run's tallest box (the
	// line box: about 1.2 times the effective font size). Below it text scaled down is a smudge.
	minRunHeight = 6
	// maxPixelTime bounds the layout and the shots (and at most a quarter of what is left of the
	// read's time): a page that takes longer is read by the paint heuristics, and the log says so.
	maxPixelTime = 4 * time.Second
	// maxPixelNodes: a page whose DOM has more nodes is read by the paint heuristics (its layout
	// alone costs as much as its read; under load the two overran the navigation timeout).
	maxPixelNodes = 2500
	// maxShotHeight bounds the shot's height in CSS px; runs below it (and runs scrolled away
	// inside a scroll container) are decided by the reader's paint heuristics instead.
	maxShotHeight = 4000
)

// run verdicts passed to the reader.
const (
	runHidden    = 0
	runVisible   = 1
	runUndecided = 2
)

// layoutRead is the reader's answer in layout mode.
type layoutRead struct {
	Runs  []json.RawMessage `json:"runs"`
	NRuns int               `json:"nRuns"`
	CapW  float64           `json:"capW"`
	CapH  float64           `json:"capH"`
}

// shoot captures the page's area at (x, y), w x h CSS px, as an image.
func shoot(ctx context.Context, t *target, x, y, w, h float64) (image.Image, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := cdpCall(ctx, t.sess, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true, "fromSurface": true, "optimizeForSpeed": true,
		"clip": map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": 1},
	}, &r); err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return img, nil
}

// maxBands bounds the shots per picture.
const maxBands = 3

// bandsOf returns the vertical spans [y0, y1) of the page that hold runs' boxes, merged where
// they are less than 400 px apart (one shot costs more than the pixels it skips) and then, closest first, down to maxBands.
func bandsOf(boxes [][][4]float64, h float64) [][2]float64 {
	var iv [][2]float64
	for _, bs := range boxes {
		for _, r := range bs {
			iv = append(iv, [2]float64{math.Max(0, math.Floor(r[1])-2), math.Min(h, math.Ceil(r[1]+r[3])+2)})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	var out [][2]float64
	for _, x := range iv {
		if n := len(out); n > 0 && x[0]-out[n-1][1] < 400 {
			out[n-1][1] = math.Max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	for len(out) > maxBands {
		best := 1
		for i := 2; i < len(out); i++ {
			if out[i][0]-out[i-1][1] < out[best][0]-out[best-1][1] {
				best = i
			}
		}
		out[best-1][1] = out[best][1]
		out = append(out[:best], out[best+1:]...)
	}
	return out
}

// shootBands shoots each band and puts the shots, in place, on one w x h picture.
func shootBands(ctx context.Context, t *target, w, h float64, bands [][2]float64) (image.Image, error) {
	var canvas *image.RGBA
	for _, bd := range bands {
		img, err := shoot(ctx, t, 0, bd[0], w, bd[1]-bd[0])
		if err != nil {
			return nil, err
		}
		if canvas == nil {
			scale := float64(img.Bounds().Dx()) / w
			canvas = image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), int(h*scale+0.5)))
		}
		scale := float64(canvas.Rect.Dx()) / w
		draw.Draw(canvas, image.Rect(0, int(bd[0]*scale), img.Bounds().Dx(), int(bd[0]*scale)+img.Bounds().Dy()), img, img.Bounds().Min, draw.Src)
	}
	if canvas == nil {
		return image.NewRGBA(image.Rect(0, 0, 1, 1)), nil
	}
	return canvas, nil
}

// readRendered reads the main frame with verdicts from pixels: scripts disabled from the layout
// to the read, so that the read walks the same runs the shots were compared for. It falls back
// to the paint heuristics (a read without verdicts) when the shots cannot be taken.
func (s *Session) readRendered(ctx context.Context, v *pageView, frame string) (*rawRead, error) {
	t := v.owner[frame]
	if err := cdpCall(ctx, t.sess, "Page.setWebLifecycleState", map[string]any{"state": "frozen"}, nil); err != nil {
		return nil, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = cdpCall(uctx, t.sess, "Page.setWebLifecycleState", map[string]any{"state": "active"}, nil)
	}()
	pctx, cancel := context.WithTimeout(ctx, min(time.Until(deadlineOf(ctx))/4, maxPixelTime))
	verdicts, err := s.pixelVerdicts(pctx, v, frame)
	cancel()
	if err != nil {
		s.cfg.logf("bridge: visibility by rendering failed, reading by styles: %v", err)
		verdicts = nil
	}
	rr, err := s.evalFrame(ctx, v, frame, "read", map[string]any{"verdicts": verdicts})
	if err != nil {
		return nil, err
	}
	if verdicts != nil && rr.NRuns != len(verdicts) {
		// The page is not the one the shots were compared for: read it by styles.
		return s.evalFrame(ctx, v, frame, "read", nil)
	}
	return rr, nil
}

// paintOn removes the paint-off style, even when ctx is over (the read that follows must see the
// page's own paint): it has its own few seconds.
func (s *Session) paintOn(ctx context.Context, v *pageView, frame string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := s.evalFrame(ctx, v, frame, "paint", map[string]any{"paint": "on"})
	return err
}

// pixelVerdicts lays out the frame, takes the three shots and decides each run.
func (s *Session) pixelVerdicts(ctx context.Context, v *pageView, frame string) ([]int, error) {
	t := v.owner[frame]
	lay, err := s.evalFrame(ctx, v, frame, "layout", map[string]any{"maxShotH": maxShotHeight})

	if err != nil {
		return nil, err
	}
	var l layoutRead
	if err := json.Unmarshal(lay.Layout, &l); err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	verdicts := make([]int, len(l.Runs))
	boxes := make([][][4]float64, len(l.Runs))
	shots := false
	for i, raw := range l.Runs {
		switch string(raw) {
		case "null":
			verdicts[i] = runUndecided
		case "0":
			verdicts[i] = runHidden
		default:
			if err := json.Unmarshal(raw, &boxes[i]); err != nil {
				return nil, fmt.Errorf("layout run %d: %w", i, err)
			}
			shots = true
		}
	}
	if !shots {
		return verdicts, nil
	}
	w, h := l.CapW, l.CapH
	bands := bandsOf(boxes, h)
	a, err := shootBands(ctx, t, w, h, bands)
	if err != nil {
		return nil, err
	}

	if _, err := s.evalFrame(ctx, v, frame, "paint", map[string]any{"paint": "off"}); err != nil {
		s.paintOn(ctx, v, frame)
		return nil, err
	}
	b, errB := shootBands(ctx, t, w, h, bands)
	if err := s.paintOn(ctx, v, frame); err != nil {
		return nil, err
	}
	if errB != nil {
		return nil, errB
	}
	a2, err := shootBands(ctx, t, w, h, bands)
	if err != nil {
		return nil, err
	}
	decide(verdicts, boxes, a, b, a2, w)
	return verdicts, nil
}

// decide sets the verdict of every run with boxes from the three shots (see the thresholds).
func decide(verdicts []int, boxes [][][4]float64, a, b, a2 image.Image, cssW float64) {
	bounds := a.Bounds()
	W, H := bounds.Dx(), bounds.Dy()
	scale := float64(W) / cssW
	if cssW <= 0 {
		scale = 1
	}
	px := func(r [4]float64) (x0, y0, x1, y1 int) {
		x0, y0 = int(r[0]*scale), int(r[1]*scale)
		x1, y1 = int((r[0]+r[2])*scale+0.999), int((r[1]+r[3])*scale+0.999)
		return max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
	}
	// How many runs cover each pixel: a pixel under two runs is drawn by neither alone.
	cover := make([]uint8, W*H)
	for _, bs := range boxes {
		for _, r := range bs {
			x0, y0, x1, y1 := px(r)
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					if cover[y*W+x] < 255 {
						cover[y*W+x]++
					}
				}
			}
		}
	}
	pa, pb, pa2 := pixOf(a), pixOf(b), pixOf(a2)
	at := func(p pixels, x, y int) (int, int, int) {
		if p.pix != nil {
			i := y*p.stride + x*4
			return int(p.pix[i]), int(p.pix[i+1]), int(p.pix[i+2])
		}
		r, g, bl, _ := p.img.At(bounds.Min.X+x, bounds.Min.Y+y).RGBA()
		return int(r >> 8), int(g >> 8), int(bl >> 8)
	}
	diff := func(r1, g1, b1, r2, g2, b2 int) int {
		return max(abs(r1-r2), abs(g1-g2), abs(b1-b2))
	}
	for i, bs := range boxes {
		if bs == nil {
			continue
		}
		drawn, tallest := 0, 0.0
		for _, r := range bs {
			tallest = max(tallest, r[3])
			x0, y0, x1, y1 := px(r)
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					if cover[y*W+x] != 1 {
						continue
					}
					ar, ag, ab := at(pa, x, y)
					if cr, cg, cb := at(pa2, x, y); diff(ar, ag, ab, cr, cg, cb) > pixelStable {
						continue
					}
					br, bg, bb := at(pb, x, y)
					if diff(ar, ag, ab, br, bg, bb) >= pixelDelta {
						drawn++
					}
				}
			}
		}
		if drawn >= minPixels && tallest >= minRunHeight {
			verdicts[i] = runVisible
		} else {
			verdicts[i] = runHidden
		}
	}
}

// pixels gives direct access to an RGBA or NRGBA image's bytes (screenshots are opaque, so
// both hold plain colour values).
type pixels struct {
	img    image.Image
	pix    []byte
	stride int
}

func pixOf(img image.Image) pixels {
	switch m := img.(type) {
	case *image.RGBA:
		return pixels{img: img, pix: m.Pix[m.PixOffset(m.Rect.Min.X, m.Rect.Min.Y):], stride: m.Stride}
	case *image.NRGBA:
		return pixels{img: img, pix: m.Pix[m.PixOffset(m.Rect.Min.X, m.Rect.Min.Y):], stride: m.Stride}
	}
	return pixels{img: img}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
