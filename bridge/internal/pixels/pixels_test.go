package pixels

import (
	"image"
	"image/color"
	"testing"
)

// The pixel arithmetic on synthetic images, without Chromium (issue 30). A run's key here is its
// index.

// pending says every run is pending.
func pending(int) bool { return true }

// canvas is a w x h opaque white image with black pixels at dots.
func canvas(w, h int, dots ...image.Point) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = 255
	}
	for _, p := range dots {
		m.Set(p.X, p.Y, color.Black)
	}
	return m
}

func TestCountBand(t *testing.T) {
	glyph := []image.Point{{2, 2}, {3, 2}, {4, 2}, {2, 3}, {3, 3}}
	bd := Band{0, 0, 20, 20}
	run := Run[int]{Key: 0, Box: [4]float64{0, 0, 10, 10}}
	drawnIf := func(pending func(int) bool, all []Run[int], movers [][4]float64, a, b, c, a2 image.Image) int {
		counts := map[int]*Tally{}
		CountBand(bd, all, pending, movers, a, b, c, a2, counts)
		if tl := counts[0]; tl != nil {
			return tl.Drawn
		}
		return 0
	}
	drawn := func(all []Run[int], movers [][4]float64, a, b, c, a2 image.Image) int {
		return drawnIf(pending, all, movers, a, b, c, a2)
	}
	a, off := canvas(20, 20, glyph...), canvas(20, 20)
	for _, c := range []struct {
		name     string
		all      []Run[int]
		movers   [][4]float64
		b, c, a2 image.Image
		want     int
	}{
		{name: "drawn by the run (four frames)", all: []Run[int]{run}, b: off, c: canvas(20, 20, glyph...), a2: canvas(20, 20, glyph...), want: 5},
		{name: "two frames: A serves as C and A2", all: []Run[int]{run}, b: off, c: a, a2: a, want: 5},
		{name: "not drawn (B as A)", all: []Run[int]{run}, b: a, c: a, a2: a, want: 0},
		{name: "unstable (A2 differs)", all: []Run[int]{run}, b: off, c: a, a2: off, want: 0},
		{name: "drawn by other text (C differs)", all: []Run[int]{run}, b: off, c: off, a2: a, want: 0},
		{name: "under another run's box", all: []Run[int]{run, {Key: 1, Box: [4]float64{0, 0, 10, 10}}}, b: off, c: a, a2: a, want: 0},
		{name: "where another run's ink may reach (its shadow)", all: []Run[int]{run, {Key: 1, Box: [4]float64{0, 12, 10, 6}, Ink: [4]float64{0, 0, 10, 18}}}, b: off, c: a, a2: a, want: 0},
		{name: "beside another run's ink", all: []Run[int]{run, {Key: 1, Box: [4]float64{0, 12, 10, 6}, Ink: [4]float64{0, 11, 10, 7}}}, b: off, c: a, a2: a, want: 5},
		{name: "inside a mover's box", all: []Run[int]{run}, movers: [][4]float64{{0, 0, 10, 10}}, b: off, c: a, a2: a, want: 0},
		{name: "a mover beside it", all: []Run[int]{run}, movers: [][4]float64{{12, 0, 5, 5}}, b: off, c: a, a2: a, want: 5},
	} {
		if got := drawn(c.all, c.movers, a, c.b, c.c, c.a2); got != c.want {
			t.Errorf("%s: %d drawn pixels, want %d", c.name, got, c.want)
		}
	}
	// Faint: a difference under Delta is not drawn.
	faint := canvas(20, 20)
	for _, p := range glyph {
		faint.Set(p.X, p.Y, color.RGBA{255 - Delta + 1, 255 - Delta + 1, 255 - Delta + 1, 255})
	}
	if got := drawn([]Run[int]{run}, nil, faint, off, faint, faint); got != 0 {
		t.Errorf("faint: %d drawn pixels, want 0", got)
	}
	// Shots of another size than the band's: nothing counted (the run is decided hidden).
	if got := drawn([]Run[int]{run}, nil, a, canvas(10, 10), a, a); got != 0 {
		t.Errorf("sizes differ: %d drawn pixels, want 0", got)
	}
	// A run no longer pending (decided by an earlier band) is not counted, and still covers: the
	// pixels under its box are no other run's evidence.
	decided := func(k int) bool { return k != 1 }
	if got := drawnIf(func(k int) bool { return k != 0 }, []Run[int]{run}, nil, a, off, a, a); got != 0 {
		t.Errorf("a run not pending: %d drawn pixels, want 0", got)
	}
	if got := drawnIf(decided, []Run[int]{run, {Key: 1, Box: [4]float64{0, 0, 10, 10}}}, nil, a, off, a, a); got != 0 {
		t.Errorf("under a decided run's box: %d drawn pixels, want 0", got)
	}
	if !Visible(&Tally{Drawn: MinPixels, Tallest: MinRunHeight}) || Visible(&Tally{Drawn: MinPixels - 1, Tallest: 20}) ||
		Visible(&Tally{Drawn: 50, Tallest: MinRunHeight - 1}) || Visible(nil) {
		t.Error("Visible: the thresholds MinPixels and MinRunHeight are not applied")
	}
}

// TestConfirmed: a pixel of D counts only where a second shot of D agrees; elsewhere it takes
// A's value, so no run's ink is counted there (the stale surface of an out-of-process frame).
func TestConfirmed(t *testing.T) {
	glyph := []image.Point{{2, 2}, {3, 2}, {4, 2}, {2, 3}, {3, 3}}
	bd := Band{0, 0, 20, 20}
	run := Run[int]{Key: 0, Box: [4]float64{0, 0, 10, 10}}
	a, off := canvas(20, 20, glyph...), canvas(20, 20)
	drawn := func(d image.Image) int {
		counts := map[int]*Tally{}
		CountBand(bd, []Run[int]{run}, pending, nil, a, d, a, a, counts)
		if tl := counts[0]; tl != nil {
			return tl.Drawn
		}
		return 0
	}
	for _, c := range []struct {
		name  string
		d, d2 image.Image
		want  int
	}{
		{name: "both shots of D without the glyph: drawn by the run", d: off, d2: off, want: 5},
		{name: "D without it, the second D with it (D was stale)", d: off, d2: a, want: 0},
		{name: "D with it, the second D without it", d: a, d2: off, want: 0},
		{name: "both with it: not drawn by the run", d: a, d2: a, want: 0},
		{name: "the second D of another size: nothing confirmed", d: off, d2: canvas(10, 10), want: 0},
	} {
		if got := drawn(Confirmed(a, c.d, c.d2)); got != c.want {
			t.Errorf("%s: %d drawn pixels, want %d", c.name, got, c.want)
		}
	}
}

func TestBandsOf(t *testing.T) {
	box := func(y, h float64) Run[int] { return Run[int]{Box: [4]float64{10, y, 40, h}} }
	judge := []Run[int]{box(500, 20), box(0, 20), box(30, 20), box(9000, 5000)}
	bands, in := BandsOf(judge, 4000)
	if len(bands) != 2 {
		t.Fatalf("%d bands, want 2 (the near boxes merged, the far one taller than the bound alone): %v", len(bands), bands)
	}
	// Sorted by top: 0, 30 and 500 share the first band; the tall one is a band of its own.
	if in[0] != 0 || in[1] != 0 || in[2] != 0 || in[3] != 1 {
		t.Errorf("bands of the boxes: %v, want [0 0 0 1]", in)
	}
	if b := bands[0]; b.Y0 != 0 || b.Y1 != 522 || b.X0 != 8 || b.X1 != 52 {
		t.Errorf("first band %+v: want the boxes' extent with 2 px around, clipped at 0", b)
	}
	for _, b := range bands {
		if (b.Y1-b.Y0)*(b.X1-b.X0) > MaxBandArea && b.Y1-b.Y0 <= 4000 {
			t.Errorf("band %+v over MaxBandArea", b)
		}
	}
}

// TestPixOf: the direct byte access (RGBA, NRGBA, a sub-image of either) reads what the generic
// path (any other image) reads, at the same coordinates relative to the image's bounds.
func TestPixOf(t *testing.T) {
	c := color.RGBA{10, 200, 30, 255}
	rgba := canvas(8, 8, image.Point{3, 4})
	rgba.Set(5, 6, c)
	nrgba := image.NewNRGBA(rgba.Rect)
	gray := image.NewGray16(rgba.Rect)
	for y := 0; y < 8; y++ {
		for x := 0; x < 8; x++ {
			nrgba.Set(x, y, rgba.At(x, y))
			gray.Set(x, y, color.Gray16Model.Convert(rgba.At(x, y)))
		}
	}
	sub := rgba.SubImage(image.Rect(2, 2, 8, 8))
	for _, p := range []image.Point{{3, 4}, {5, 6}, {0, 0}} {
		want := pixOf(rgba).at3(p.X, p.Y)
		if got := pixOf(nrgba).at3(p.X, p.Y); got != want {
			t.Errorf("NRGBA at %v: %v, want %v", p, got, want)
		}
		if p.X >= 2 && p.Y >= 2 {
			if got := pixOf(sub).at3(p.X-2, p.Y-2); got != want {
				t.Errorf("sub-image at %v: %v, want %v", p, got, want)
			}
		}
	}
	// The generic path: a grey image reads its grey level in every channel.
	if got := pixOf(gray).at3(3, 4); got != [3]int{0, 0, 0} {
		t.Errorf("Gray16 at the black dot: %v", got)
	}
	if got := diff(10, 200, 30, [3]int{40, 190, 30}); got != 30 {
		t.Errorf("diff: %d, want the largest channel difference 30", got)
	}
}

// TestOtherInk: the split's measure of another run's ink inside a run's boxes: the pixels every
// run's paint changes (a, d) that the split's does not (a, dp), each counted once however many
// of the boxes hold it, none outside them.
func TestOtherInk(t *testing.T) {
	bd := Band{0, 0, 20, 20}
	mine := []image.Point{{2, 2}, {7, 7}}             // its glyphs' extent: 1..8 both ways
	theirs := []image.Point{{5, 5}, {6, 5}, {15, 15}} // the last outside the boxes
	a := canvas(20, 20, append(append([]image.Point{}, mine...), theirs...)...)
	d := canvas(20, 20)             // every run's paint off
	dp := canvas(20, 20, theirs...) // only this run's off: the others' ink stays
	boxes := [][4]float64{{0, 0, 10, 10}, {4, 4, 4, 4}}
	if n := OtherInk(bd, boxes, a, d, dp); n != 2 {
		t.Errorf("other ink: %d pixels, want 2", n)
	}
	if n := OtherInk(bd, boxes, a, d, d); n != 0 {
		t.Errorf("no other ink (the split turned off what D did): %d pixels, want 0", n)
	}
	// Beside its glyphs (an italic word's overhang into the box of the period after it): not
	// counted.
	beside := canvas(20, 20, image.Point{2, 2}, image.Point{5, 5}, image.Point{6, 5})
	if n := OtherInk(bd, boxes, beside, d, canvas(20, 20, image.Point{5, 5}, image.Point{6, 5})); n != 0 {
		t.Errorf("other ink beside the run's own: %d pixels, want 0", n)
	}
	if n := OtherInk(bd, boxes, a, d, canvas(10, 10)); n < 1<<20 {
		t.Errorf("a shot of another size: %d pixels, want it counted as all another's", n)
	}
}

// TestStableIn: A2 merged with A3 counts a pixel stable (A and the merge agree) only where A, A2
// and every later shot (A3, A4) agree; shots of another size count nothing.
func TestStableIn(t *testing.T) {
	dot := image.Point{3, 3}
	a := canvas(8, 8)
	stable := func(m image.Image, p image.Point) bool {
		ar, ag, ab := pixOf(a).at(p.X, p.Y)
		return diff(ar, ag, ab, pixOf(m).at3(p.X, p.Y)) <= Stable
	}
	if m := StableIn(a, a, a); !stable(m, dot) || !stable(m, image.Point{0, 0}) {
		t.Error("A, A2 and A3 alike: a pixel not stable")
	}
	if m := StableIn(a, a, canvas(8, 8, dot)); stable(m, dot) || !stable(m, image.Point{0, 0}) {
		t.Error("A3 drew a pixel A and A2 did not: still stable, or another pixel made unstable")
	}
	if m := StableIn(a, canvas(8, 8, dot), canvas(8, 8, dot)); stable(m, dot) {
		t.Error("A2 and A3 drew a pixel A did not: stable")
	}
	if m := StableIn(a, a, a, canvas(8, 8, dot)); stable(m, dot) || !stable(m, image.Point{0, 0}) {
		t.Error("A2 and A3 stale (like A), A4 drew a pixel: still stable")
	}
	if m := StableIn(a, a, canvas(4, 4)); m.Bounds().Size() == a.Bounds().Size() {
		t.Error("A3 of another size: merged as if comparable")
	}
}

// TestChanged: the pixels drawing something changed by Delta or more; a faint change is none, and
// shots of different sizes are wholly changed.
func TestChanged(t *testing.T) {
	a := canvas(8, 8)
	if n := Changed(a, canvas(8, 8, image.Point{1, 1}, image.Point{2, 2})); n != 2 {
		t.Errorf("two dots: %d changed, want 2", n)
	}
	faint := canvas(8, 8)
	faint.Set(1, 1, color.RGBA{255 - Delta + 1, 255, 255, 255})
	if n := Changed(a, faint); n != 0 {
		t.Errorf("a change under Delta: %d changed, want 0", n)
	}
	if n := Changed(a, canvas(4, 4)); n < 1<<20 {
		t.Errorf("another size: %d changed, want all", n)
	}
}
