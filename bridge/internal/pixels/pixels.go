// Package pixels is the arithmetic of the bridge's visibility proof (visibility.go): the bands a
// group of shots covers, each run's drawn pixels counted from the shots, and the merges of shots
// that leave a pixel as evidence only where every shot agrees. Pure functions of boxes and images,
// no browser: its tests hold them to synthetic images. The bridge shoots; this package counts.
package pixels

import (
	"image"
	"math"
	"sort"
)

// The thresholds, measured on the corpus in the bridge's visibility_test.go.
const (
	// Delta is the least per-channel difference between A and B that counts a pixel as drawn by
	// text: below it the text is too faint to read against what is behind it (black at opacity
	// 0.12 on white gives 31).
	Delta = 32
	// Stable is the most difference between A and A2 for a pixel to be compared at all.
	Stable = 8
	// MinPixels is the least number of drawn pixels for a run to be visible.
	MinPixels = 3
	// MinRunHeight is the least height, in CSS px after transforms, of a run's tallest box (the
	// line box: about 1.2 times the effective font size). Below it text scaled down is a smudge.
	MinRunHeight = 6
)

// Visible says whether a run with tally tl is visible: from MinPixels drawn pixels on, in a box at
// least MinRunHeight tall.
func Visible(tl *Tally) bool {
	return tl != nil && tl.Drawn >= MinPixels && tl.Tallest >= MinRunHeight
}

// Run is one run's box to judge, or another run's box (cover only), with the run's key (the
// bridge's frame and run index). Ink is the box grown by how far the run's ink may reach past it
// (its shadows, stroke, glyphs past the font's box): no pixel there is evidence for another run.
// Boxes are x, y, width and height in CSS px of the page.
type Run[K comparable] struct {
	Key K
	Box [4]float64
	Ink [4]float64
}

// Reach is where the run's ink may be: Ink, or its box when Ink was not set.
func (rb Run[K]) Reach() [4]float64 {
	if rb.Ink == ([4]float64{}) {
		return rb.Box
	}
	return rb.Ink
}

// InkBox grows box by margin (top, right, bottom, left).
func InkBox(box, margin [4]float64) [4]float64 {
	return [4]float64{box[0] - margin[3], box[1] - margin[0], box[2] + margin[1] + margin[3], box[3] + margin[0] + margin[2]}
}

// Tally is what the shots showed of one run: its drawn pixels and its tallest box.
type Tally struct {
	Drawn   int
	Tallest float64
}

// Band is a rectangle of the page shot at once, in CSS px of the page.
type Band struct {
	X0, Y0, X1, Y1 float64
}

// MaxBandH and MaxBandArea bound one shot, in CSS px.
const (
	MaxBandH    = 4000
	MaxBandArea = 4000 * 1280
)

// SliceW is how much of each box's width is shot, in CSS px: a few glyphs.
const SliceW = 48

// BandsOf returns rectangles of the page that hold the boxes to judge: boxes sorted by top,
// merged while the band stays within maxH (a box taller than that is a band of its own),
// each band as wide as its boxes; and, for each box of judge (sorted in place), its band.
func BandsOf[K comparable](judge []Run[K], maxH float64) ([]Band, []int) {
	sort.SliceStable(judge, func(i, k int) bool { return judge[i].Box[1] < judge[k].Box[1] })
	var out []Band
	in := make([]int, len(judge))
	for i, rb := range judge {
		r := rb.Box
		x0, y0 := math.Max(0, math.Floor(r[0])-2), math.Max(0, math.Floor(r[1])-2)
		x1, y1 := math.Ceil(r[0]+r[2])+2, math.Ceil(r[1]+r[3])+2
		if n := len(out); n > 0 && math.Max(out[n-1].Y1, y1)-out[n-1].Y0 <= maxH &&
			(math.Max(out[n-1].Y1, y1)-out[n-1].Y0)*(math.Max(out[n-1].X1, x1)-math.Min(out[n-1].X0, x0)) <= MaxBandArea {
			b := &out[n-1]
			b.X0, b.X1, b.Y1 = math.Min(b.X0, x0), math.Max(b.X1, x1), math.Max(b.Y1, y1)
			in[i] = n - 1
			continue
		}
		out = append(out, Band{x0, y0, x1, y1})
		in[i] = len(out) - 1
	}
	return out, in
}

// bandPixels maps a box in page coordinates to the pixel rectangle it covers in a W x H shot of
// band bd, clipped to the shot.
func bandPixels(bd Band, W, H int) func(r [4]float64) (x0, y0, x1, y1 int) {
	scale := float64(W) / (bd.X1 - bd.X0)
	return func(r [4]float64) (x0, y0, x1, y1 int) {
		x0, y0 = int((r[0]-bd.X0)*scale), int((r[1]-bd.Y0)*scale)
		x1, y1 = int((r[0]+r[2]-bd.X0)*scale+0.999), int((r[1]+r[3]-bd.Y0)*scale+0.999)
		return max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
	}
}

// CountBand adds, for every pending run with a box in the band, the pixels it alone covers
// outside every mover's box that are stable (a, a2), drawn by text (a, b) and not drawn by other
// text (a, c: generated content, markers, form controls), and its tallest box. A run is pending
// while pending says so of its key; every run of all covers its reach, pending or not.
func CountBand[K comparable](bd Band, all []Run[K], pending func(K) bool, movers [][4]float64, a, b, c, a2 image.Image, counts map[K]*Tally) {
	W, H := a.Bounds().Dx(), a.Bounds().Dy()
	if b.Bounds() != a.Bounds() || c.Bounds() != a.Bounds() || a2.Bounds() != a.Bounds() || W == 0 {
		return // nothing counted: the runs are decided hidden
	}
	px := bandPixels(bd, W, H)
	cover := make([]uint8, W*H)
	for _, rb := range all {
		x0, y0, x1, y1 := px(rb.Reach())
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
		if !pending(rb.Key) {
			continue
		}
		x0, y0, x1, y1 := px(rb.Box)
		if x1 <= x0 || y1 <= y0 || rb.Box[1] < bd.Y0 || rb.Box[1]+rb.Box[3] > bd.Y1+1 {
			continue
		}
		tl := counts[rb.Key]
		if tl == nil {
			tl = &Tally{}
			counts[rb.Key] = tl
		}
		tl.Tallest = max(tl.Tallest, rb.Box[3])
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if cover[y*W+x] != 1 {
					continue
				}
				ar, ag, ab := pa.at(x, y)
				if diff(ar, ag, ab, pa2.at3(x, y)) > Stable {
					continue
				}
				if diff(ar, ag, ab, pc.at3(x, y)) >= Delta {
					continue // other text is drawn here
				}
				if diff(ar, ag, ab, pb.at3(x, y)) >= Delta {
					tl.Drawn++
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

// StableShots says whether b shows what a shows: the same size, and no pixel differing by more
// than Stable.
func StableShots(a, b []image.Image) bool {
	for i := range a {
		if a[i].Bounds().Size() != b[i].Bounds().Size() {
			return false
		}
		pa, pb := pixOf(a[i]), pixOf(b[i])
		W, H := a[i].Bounds().Dx(), a[i].Bounds().Dy()
		for y := range H {
			for x := range W {
				r, g, bl := pa.at(x, y)
				if diff(r, g, bl, pb.at3(x, y)) > Stable {
					return false
				}
			}
		}
	}
	return true
}

// Confirmed is d where a second shot of the same state (d2) agrees with it, and a's pixel where
// it does not: a pixel of D no second shot confirms is no evidence that a run drew in A (it then
// equals A, and CountBand counts no run's ink there). Images of other sizes give a (nothing
// confirmed).
func Confirmed(a, d, d2 image.Image) image.Image {
	if d.Bounds().Size() != a.Bounds().Size() || d2.Bounds().Size() != a.Bounds().Size() {
		return a
	}
	pa, pd, pd2 := pixOf(a), pixOf(d), pixOf(d2)
	return eachPixel(a, func(x, y int) (int, int, int) {
		r, g, b := pd.at(x, y)
		if diff(r, g, b, pd2.at3(x, y)) > Stable {
			return pa.at(x, y)
		}
		return r, g, b
	})
}

// StableIn returns a2 where every later shot shows what it shows, and elsewhere a colour far
// from a's (128 off in each channel), so that a pixel counts as stable (CountBand: a and a2
// agree) only where a, a2 and every later shot agree. Shots of another size than a give the
// odd one itself (nothing counted).
func StableIn(a, a2 image.Image, later ...image.Image) image.Image {
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
			if diff(r, g, b, p.at3(x, y)) > Stable {
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

// OtherInk counts the pixels of boxes, in the band, that the runs' paint changes (a and d differ)
// but the split's does not (a and dp agree): another run's ink among this run's glyphs (split).
// Only the extent of the run's own ink in each box counts (where the split's shot changed it, one
// pixel around): text drawn over it lies there, while an italic word's overhang into the next
// run's box lies beside that run's glyphs (the period after "int", Python's uuid.html).
func OtherInk(bd Band, boxes [][4]float64, a, d, dp image.Image) int {
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
				if diff(ar, ag, ab, pp.at3(x, y)) >= Delta {
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
				if diff(ar, ag, ab, pd.at3(x, y)) >= Delta && diff(ar, ag, ab, pp.at3(x, y)) < Delta {
					n++
				}
			}
		}
	}
	return n
}

// Changed counts the pixels where b differs from a by Delta or more: what drawing something
// changed. Images of different sizes count as wholly changed (math.MaxInt32).
func Changed(a, b image.Image) int {
	if a.Bounds().Size() != b.Bounds().Size() {
		return math.MaxInt32
	}
	pa, pb := pixOf(a), pixOf(b)
	n := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r, g, bl := pa.at(x, y)
			if diff(r, g, bl, pb.at3(x, y)) >= Delta {
				n++
			}
		}
	}
	return n
}
