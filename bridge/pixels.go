package bridge

import (
	"image"
	"math"
	"sort"
)

// The pixel arithmetic of the visibility proof (visibility.go): the bands a group of shots covers,
// and each run's drawn pixels counted from the shots. Pure functions of boxes and images, no
// browser: pixels_test.go holds them to synthetic images.

// verdictOf is a run's verdict from its tally: visible from minPixels drawn pixels on, in a box at
// least minRunHeight tall.
func verdictOf(tl *tally) int {
	if tl != nil && tl.drawn >= minPixels && tl.tallest >= minRunHeight {
		return runVisible
	}
	return runHidden
}

// runBox is one run's box to judge, or another run's box (cover only). ink is the box grown by
// how far the run's ink may reach past it (its shadows, stroke, glyphs past the font's box): no
// pixel there is evidence for another run.
type runBox struct {
	f   *frameRuns
	run int
	box [4]float64
	ink [4]float64
}

// reach is where the run's ink may be: ink, or its box when ink was not set.
func (rb runBox) reach() [4]float64 {
	if rb.ink == ([4]float64{}) {
		return rb.box
	}
	return rb.ink
}

// inkBox grows box by margin (top, right, bottom, left).
func inkBox(box, margin [4]float64) [4]float64 {
	return [4]float64{box[0] - margin[3], box[1] - margin[0], box[2] + margin[1] + margin[3], box[3] + margin[0] + margin[2]}
}

type runKey struct {
	f   *frameRuns
	run int
}

type tally struct {
	drawn   int
	tallest float64
}

// band is a rectangle of the page shot at once, and the tallest box and pixel count per run in it.
type band struct {
	x0, y0, x1, y1 float64
}

// maxBandH and maxBandArea bound one shot, in CSS px.
const (
	maxBandH    = 4000
	maxBandArea = 4000 * 1280
)

// sliceW is how much of each box's width is shot, in CSS px: a few glyphs.
const sliceW = 48

// bandsOf returns rectangles of the page that hold the boxes to judge: boxes sorted by top,
// merged while the band stays within maxH (a box taller than that is a band of its own),
// each band as wide as its boxes; and, for each box of judge (sorted in place), its band.
func bandsOf(judge []runBox, maxH float64) ([]band, []int) {
	sort.SliceStable(judge, func(i, k int) bool { return judge[i].box[1] < judge[k].box[1] })
	var out []band
	in := make([]int, len(judge))
	for i, rb := range judge {
		r := rb.box
		x0, y0 := math.Max(0, math.Floor(r[0])-2), math.Max(0, math.Floor(r[1])-2)
		x1, y1 := math.Ceil(r[0]+r[2])+2, math.Ceil(r[1]+r[3])+2
		if n := len(out); n > 0 && math.Max(out[n-1].y1, y1)-out[n-1].y0 <= maxH &&
			(math.Max(out[n-1].y1, y1)-out[n-1].y0)*(math.Max(out[n-1].x1, x1)-math.Min(out[n-1].x0, x0)) <= maxBandArea {
			b := &out[n-1]
			b.x0, b.x1, b.y1 = math.Min(b.x0, x0), math.Max(b.x1, x1), math.Max(b.y1, y1)
			in[i] = n - 1
			continue
		}
		out = append(out, band{x0, y0, x1, y1})
		in[i] = len(out) - 1
	}
	return out, in
}

// bandPixels maps a box in page coordinates to the pixel rectangle it covers in a W x H shot of
// band bd, clipped to the shot.
func bandPixels(bd band, W, H int) func(r [4]float64) (x0, y0, x1, y1 int) {
	scale := float64(W) / (bd.x1 - bd.x0)
	return func(r [4]float64) (x0, y0, x1, y1 int) {
		x0, y0 = int((r[0]-bd.x0)*scale), int((r[1]-bd.y0)*scale)
		x1, y1 = int((r[0]+r[2]-bd.x0)*scale+0.999), int((r[1]+r[3]-bd.y0)*scale+0.999)
		return max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
	}
}

// countBand adds, for every pending run with a box in the band, the pixels it alone covers
// outside every mover's box that are stable (a, a2), drawn by text (a, b) and not drawn by other
// text (a, c: generated content, markers, form controls), and its tallest box.
func countBand(bd band, all []runBox, movers [][4]float64, a, b, c, a2 image.Image, counts map[runKey]*tally) {
	W, H := a.Bounds().Dx(), a.Bounds().Dy()
	if b.Bounds() != a.Bounds() || c.Bounds() != a.Bounds() || a2.Bounds() != a.Bounds() || W == 0 {
		return // nothing counted: the runs are decided hidden
	}
	px := bandPixels(bd, W, H)
	cover := make([]uint8, W*H)
	for _, rb := range all {
		x0, y0, x1, y1 := px(rb.reach())
		for y := y0; y < y1; y++ {
			row := cover[y*W : y*W+W]
			for x := x0; x < x1; x++ {
				if row[x] < 255 {
					row[x]++
				}
			}
		}
	}
	for _, m := range movers {
		x0, y0, x1, y1 := px(m)
		for y := y0; y < y1; y++ {
			row := cover[y*W : y*W+W]
			for x := x0; x < x1; x++ {
				row[x] = 255 // never 1: not evidence
			}
		}
	}
	pa, pb, pc, pa2 := pixOf(a), pixOf(b), pixOf(c), pixOf(a2)
	for _, rb := range all {
		if !rb.f.pending[rb.run] {
			continue
		}
		x0, y0, x1, y1 := px(rb.box)
		if x1 <= x0 || y1 <= y0 || rb.box[1] < bd.y0 || rb.box[1]+rb.box[3] > bd.y1+1 {
			continue
		}
		k := runKey{rb.f, rb.run}
		tl := counts[k]
		if tl == nil {
			tl = &tally{}
			counts[k] = tl
		}
		tl.tallest = max(tl.tallest, rb.box[3])
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if cover[y*W+x] != 1 {
					continue
				}
				ar, ag, ab := pa.at(x, y)
				if diff(ar, ag, ab, pa2.at3(x, y)) > pixelStable {
					continue
				}
				if diff(ar, ag, ab, pc.at3(x, y)) >= pixelDelta {
					continue // other text is drawn here
				}
				if diff(ar, ag, ab, pb.at3(x, y)) >= pixelDelta {
					tl.drawn++
				}
			}
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

func (p pixels) at(x, y int) (int, int, int) {
	if p.pix != nil {
		i := y*p.stride + x*4
		return int(p.pix[i]), int(p.pix[i+1]), int(p.pix[i+2])
	}
	b := p.img.Bounds()
	r, g, bl, _ := p.img.At(b.Min.X+x, b.Min.Y+y).RGBA()
	return int(r >> 8), int(g >> 8), int(bl >> 8)
}

func (p pixels) at3(x, y int) [3]int {
	r, g, b := p.at(x, y)
	return [3]int{r, g, b}
}

func diff(r1, g1, b1 int, o [3]int) int {
	return max(abs(r1-o[0]), abs(g1-o[1]), abs(b1-o[2]))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// stableShots says whether b shows what a shows: the same size, and no pixel differing by more
// than pixelStable.
func stableShots(a, b []image.Image) bool {
	for i := range a {
		if a[i].Bounds().Size() != b[i].Bounds().Size() {
			return false
		}
		pa, pb := pixOf(a[i]), pixOf(b[i])
		W, H := a[i].Bounds().Dx(), a[i].Bounds().Dy()
		for y := range H {
			for x := range W {
				r, g, bl := pa.at(x, y)
				if diff(r, g, bl, pb.at3(x, y)) > pixelStable {
					return false
				}
			}
		}
	}
	return true
}

// confirmed is d where a second shot of the same state (d2) agrees with it, and a's pixel where
// it does not: a pixel of D no second shot confirms is no evidence that a run drew in A (it then
// equals A, and countBand counts no run's ink there). Images of other sizes give a (nothing
// confirmed).
func confirmed(a, d, d2 image.Image) image.Image {
	if d.Bounds().Size() != a.Bounds().Size() || d2.Bounds().Size() != a.Bounds().Size() {
		return a
	}
	pa, pd, pd2 := pixOf(a), pixOf(d), pixOf(d2)
	return eachPixel(a, func(x, y int) (int, int, int) {
		r, g, b := pd.at(x, y)
		if diff(r, g, b, pd2.at3(x, y)) > pixelStable {
			return pa.at(x, y)
		}
		return r, g, b
	})
}

// stableIn returns a2 where every later shot shows what it shows, and elsewhere a colour far
// from a's (128 off in each channel), so that a pixel counts as stable (countBand: a and a2
// agree) only where a, a2 and every later shot agree. Shots of another size than a give the
// odd one itself (nothing counted).
func stableIn(a, a2 image.Image, later ...image.Image) image.Image {
	if a2.Bounds().Size() != a.Bounds().Size() {
		return a2
	}
	ps := make([]pixels, 0, len(later))
	for _, l := range later {
		if l.Bounds().Size() != a.Bounds().Size() {
			return l
		}
		ps = append(ps, pixOf(l))
	}
	pa, p2 := pixOf(a), pixOf(a2)
	return eachPixel(a, func(x, y int) (int, int, int) {
		r, g, b := p2.at(x, y)
		for _, p := range ps {
			if diff(r, g, b, p.at3(x, y)) > pixelStable {
				r, g, b = pa.at(x, y)
				return (r + 128) % 256, (g + 128) % 256, (b + 128) % 256
			}
		}
		return r, g, b
	})
}

// eachPixel is an opaque image of like's size whose every pixel is f's colour for it.
func eachPixel(like image.Image, f func(x, y int) (int, int, int)) *image.NRGBA {
	W, H := like.Bounds().Dx(), like.Bounds().Dy()
	out := image.NewNRGBA(image.Rect(0, 0, W, H))
	for y := range H {
		for x := range W {
			r, g, b := f(x, y)
			i := out.PixOffset(x, y)
			out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(r), uint8(g), uint8(b), 255
		}
	}
	return out
}

// otherInk counts the pixels of boxes, in the band, that the runs' paint changes (a and d differ)
// but the split's does not (a and dp agree): another run's ink among this run's glyphs (split).
// Only the extent of the run's own ink in each box counts (where the split's shot changed it, one
// pixel around): text drawn over it lies there, while an italic word's overhang into the next
// run's box lies beside that run's glyphs (the period after "int", Python's uuid.html).
func otherInk(bd band, boxes [][4]float64, a, d, dp image.Image) int {
	W, H := a.Bounds().Dx(), a.Bounds().Dy()
	if d.Bounds() != a.Bounds() || dp.Bounds() != a.Bounds() || W == 0 {
		return math.MaxInt32 // shots that cannot be compared: as if all of it were another's
	}
	px := bandPixels(bd, W, H)
	seen := make(map[int]bool)
	pa, pd, pp := pixOf(a), pixOf(d), pixOf(dp)
	n := 0
	for _, b := range boxes {
		bx0, by0, bx1, by1 := px(b)
		x0, y0, x1, y1 := bx1, by1, bx0, by0
		for y := by0; y < by1; y++ {
			for x := bx0; x < bx1; x++ {
				ar, ag, ab := pa.at(x, y)
				if diff(ar, ag, ab, pp.at3(x, y)) >= pixelDelta {
					x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x+1), max(y1, y+1)
				}
			}
		}
		x0, y0, x1, y1 = max(x0-1, bx0), max(y0-1, by0), min(x1+1, bx1), min(y1+1, by1)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if seen[y*W+x] {
					continue
				}
				seen[y*W+x] = true
				ar, ag, ab := pa.at(x, y)
				if diff(ar, ag, ab, pd.at3(x, y)) >= pixelDelta && diff(ar, ag, ab, pp.at3(x, y)) < pixelDelta {
					n++
				}
			}
		}
	}
	return n
}
