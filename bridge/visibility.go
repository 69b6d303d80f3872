package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/browser-agent/browser-agent/bridge/internal/pixels"
	"github.com/browser-agent/browser-agent/bridge/internal/readerjs"
)

// Visibility by rendering. A text run reaches the model only if drawing it changes pixels a
// person can see. With the page frozen (Page.setWebLifecycleState on every target: no timers,
// tasks or observers run; Emulation.setScriptExecutionDisabled is not used because it renders
// <noscript> and so moves the layout between the shots) and its clocks stopped (the Animation
// domain's playback rate 0 on every target: CSS animations, transitions and Web Animations hold
// still, so that a pulsing heading is read as drawn at that moment), the reader lays out every
// frame (the main frame and each visible child frame, same-process or not) and reports each run's
// boxes, mapped to the main frame's page coordinates. A pixel is drawn by a run when it lies in
// the run's boxes and in no other run's and drawing the runs changes it by pixels.Delta or more.
//
// Two frames prove a page (twoFrames, shootTwo): A, as it is, and D, with exactly the runs'
// paint off: their parent elements' text fill, stroke and shadows (SVG fill and stroke), while
// what inherits from those parents without being a run (child elements, generated content,
// markers) is given the paint it has, and checked to have it (the reader's exact). Nothing else
// changes between A and D, so A also serves as the frame without the other text and as the
// second "as is" (on a page with an out-of-process frame, whose paint reaches the surface on its
// own schedule, a third shot A2 after D is that second "as is", and D too is shot until two
// shots agree). What draws by itself, which the clocks do not stop (images but still data:
// ones, media, canvases, plugins, SMIL, a frame not laid out, a caret), is no evidence in either
// proof: the pixels in its box are left out (layoutRead.Movers), since no number of shots tells
// its change from a run's paint (A and A2 may meet the same frame of an image that flickers).
// A page where such a thing has no box (an image in generated content, a list marker or the page
// background, fonts loading, a filter or reflection that may spread it), with text drawn by a
// background (background-clip: text) or restyled by ::first-line, or whose runs' paint could
// not be turned off alone, takes the four-frame proof: the bridge shoots A, makes all text
// paint transparent (fill, stroke, shadow, SVG fill) and shoots (B), makes only the paint of
// generated content, list markers and form controls transparent and shoots again (C), restores the
// paint and shoots a fourth time (A2), in every frame at once; there a pixel must also be stable
// between A and A2 and not drawn by other text (A and C differ by less than pixels.Delta). Then the
// reader reads each frame, in the same frozen state, with one verdict per run (and the credential
// check in that same evaluation). A two-frame proof during which a frame's scroll positions moved
// (a smooth scroll the page started) decides nothing.
//
// What is not shown now is shown by scrolling, as a person would: a run scrolled away inside a
// scroll container (overflow auto or scroll) or outside a child frame's viewport is scrolled
// into view (the container, the child frame), the frame laid out again and the newly shown runs
// shot in a pass of their own, up to maxReveals passes. Text in a position: fixed subtree is
// judged only where the viewport shows it, since no scroll shows the rest (the reader clips its
// boxes to the viewport). The main frame is shot in page coordinates beyond the viewport
// (captureBeyondViewport), however long the page, in bands of at most pixels.MaxBandH px. Scroll positions the passes changed are left as they are.
//
// Fail closed, and go on later rather than guess: the first pass shoots the page top down, a
// group of bands at a time, and decides each run once the bands holding it are shot. A phase
// that proved the text its read returns stops there (want, errEnough); so does one out of
// maxPixelTime, or on an error. It keeps what it decided (in each frame, up to its first run
// still pending: what was proven after it is proven again later); the runs it did not
// reach are neither read nor judged by styles, but left for the next read of the same page
// (visState): Read, Links and Fields go on where the last phase stopped, and a page's text grows
// chunk by chunk as its runs are proven visible. A run that no pass can decide (still not shown
// after the reveal passes, in a frame whose owner is drawn transformed, or when a whole phase
// decided nothing: a machine too slow to shoot even one band) is withheld, and the results say
// how many runs were withheld and why. The reader's style heuristics (paintVisible) run only when
// the operator turns pixels off (for benchmarks).
// Whatever hides text (colour on a same-colour gradient, text drawn only by a shadow or stroke
// in the background colour, nested or filtered opacity, clip paths, masks, blend modes, an
// overlay on top) leaves no drawn pixel.
//
// The arithmetic (the bands, the drawn pixels, its thresholds, measured on the corpus in
// visibility_test.go) is bridge/internal/pixels; this file shoots and decides.

// maxPixelTime bounds the pixel phase (and at most half of what is left of the read's time): what
// it has not decided by then is withheld, and the result says so.
const maxPixelTime = 10 * time.Second

// runKey names a run: its frame and its index there. The pixel arithmetic keys its counts by it.
type runKey struct {
	f   *frameRuns
	run int
}

type (
	runBox = pixels.Run[runKey]
	tally  = pixels.Tally
	band   = pixels.Band
)

// pendingRun says whether k's run is still to be decided (pixels.CountBand counts only those).
func pendingRun(k runKey) bool { return k.f.pending[k.run] }

// verdictOf is a run's verdict from its tally (pixels.Visible).
func verdictOf(tl *tally) int {
	if pixels.Visible(tl) {
		return runVisible
	}
	return runHidden
}

// thaw makes every target's page active again, even when ctx is over.
func thaw(ctx context.Context, v *pageView) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = freeze(uctx, v, "active")
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

// run verdicts passed to the reader, one per run of a frame: written once, in readerjs, which
// generates the reader's copy (js/reader/01_consts.js).
const (
	runHidden   = readerjs.RunHidden
	runVisible  = readerjs.RunVisible
	runWithheld = readerjs.RunWithheld
	runLater    = readerjs.RunLater
	runServed   = readerjs.RunServed
)

// What the phases of one page have decided of a run, kept between reads (visState).
const (
	stHidden uint8 = iota
	stVisible
	stWithheld
	stPending
)

// visState is what the pixel phases of one page decided so far, per frame and run. A read goes
// on from it: runs decided before keep their verdict, and only the pending ones are shot. A frame
// whose runs are not the ones decided before (its number of runs changed) starts again.
type visState struct {
	runs map[string][]uint8
	// why is, per frame, why each withheld run is withheld (readerjs.Why*).
	why map[string]map[int]string
	// done: nothing is pending (or pixels are off): the page's text is complete.
	done bool
	// shrink counts the phases that ran out of time having decided nothing (bandH, phaseTime).
	shrink int
}

// stuck is how many phases of the page ran out of time having decided nothing (0 for a page not
// read yet).
func (s *visState) stuck() int {
	if s == nil {
		return 0
	}
	return s.shrink
}

// keeps says whether the frame's runs are kept, some pending, for a later read: a phase that did
// not run its course and did not lay the frame out (nil-safe).
func (s *visState) keeps(frame string) bool {
	return s != nil && slices.Contains(s.runs[frame], stPending)
}

// phaseTime is the pixel phase's bound for a page whose phases ran out of time having decided
// nothing stuck times: base, doubled each time. On a busy machine the phase's fixed costs (the
// layout of every run of a long page, its first band's shots, the paint restored) can exceed
// base; smaller bands alone never let such a phase decide anything, and the page was withheld
// whole after maxShrink phases (seen in CI: a 67 KB Python manual page read as nothing, "not
// proven visible in time"). A page proven in its time never pays more: the bound is a ceiling,
// and a read stops once it proved its chunk.
func phaseTime(base time.Duration, stuck int) time.Duration {
	return base << min(stuck, maxShrink)
}

// layoutRead is the reader's answer in layout mode.
type layoutRead struct {
	Runs []json.RawMessage `json:"runs"`
	Lens []int             `json:"lens"` // each run's length in characters, white space collapsed
	// Inks: by run (its index as a key), how far its ink may reach past its boxes: top, right,
	// bottom, left, in CSS px (shadows, stroke, glyphs past the font's box); runs that reach no
	// farther are left out.
	Inks     map[string][4]float64 `json:"inks"`
	NRuns    int                   `json:"nRuns"`
	CapW     float64               `json:"capW"`
	CapH     float64               `json:"capH"`
	Revealed bool                  `json:"revealed"`
	View     [4]float64            `json:"view"` // scroll x, y, viewport width, height
	// Slow says why the frame needs the four-frame proof ("": two frames prove it).
	Slow string `json:"slow"`
	// Differs: the frame's runs are not the nodes its first layout in this read counted (the
	// page put in, took out or replaced text since): its boxes are not taken.
	Differs bool `json:"differs"`
	// Replaced are the runs whose nodes another took the place of since the kept layout (a
	// clock's text at each tick): no longer proven, the read withholds the new nodes.
	Replaced []int `json:"replaced"`
	// Still is the frame's scroll positions when laid out: the two-frame proof holds only while
	// they stay.
	Still string `json:"still"`
	// Movers are the boxes of what draws by itself (images, media, canvases, a caret...), in the
	// frame's coordinates: no pixel in them is evidence.
	Movers [][4]float64 `json:"movers"`
	Owners []struct {
		ID string  `json:"id"`
		X  float64 `json:"x"`
		Y  float64 `json:"y"`
	} `json:"owners"`
}

// frameRuns is one frame's runs in the pixel phase.
type frameRuns struct {
	id       string
	off      [2]float64     // the frame's origin in the main frame's page coordinates
	boxes    [][][4]float64 // per run, where it is shown now (main page coordinates), or nil
	lens     []int          // per run, its length in characters (layoutRead.Lens)
	verdicts []int
	pending  []bool // runs not decided yet
	old      []bool // runs decided by an earlier read (visState)
	tried    map[int]bool
	children []string
	still    string // the scroll positions of the last layout (layoutRead.Still)
	movers   [][4]float64
	inks     map[int][4]float64 // per run, how far its ink may reach past its boxes (layoutRead.Inks)
	// unsure says, for a run left pending, why no pass could decide it (reason*), when known.
	unsure map[int]string
}

// unshown says whether run i is pending and not shown now, though its frame is: only a reveal
// (its scroll containers scrolled) can show it.
func (f *frameRuns) unshown(i int) bool {
	return f.pending[i] && f.boxes != nil && f.boxes[i] == nil
}

// pixelJob is the pixel phase of one read: every frame laid out, shot together.
type pixelJob struct {
	r       *pageReader
	v       *pageView
	frames  map[string]*frameRuns
	order   []string // frames laid out, parents first
	shots   int      // screenshots taken
	passes  int
	view    [4]float64 // the main frame's scroll position and viewport
	prev    *visState  // what earlier reads of the page decided, or nil
	decided int        // runs this phase decided by pixels
	// want is how many characters of text the phase proves before it may stop (0: the whole
	// page): a read proves the chunk it returns, not the page (proven).
	want   int
	groups int  // groups of bands shot
	slow   bool // paint waits longer for out-of-process frames (recheckRemote)
	// slowWhy says why this page needs the four-frame proof, or "" (twoFrames).
	slowWhy string
	twos    int // groups proven with two frames
	splits  int // classes of overlapping runs shot apart (split)
	// tampered: the page changed its DOM while a group was shot (its MutationObserver answering
	// the proof's own changes): nothing of that group's shots, nor of any later group of this
	// job, is counted (the page answers the proof; its runs are not read).
	tampered bool
	// changes is where the page's changes during the group may have drawn, in main page
	// coordinates (all: anywhere in the group's bands); changed holds the runs they voided in
	// this pass: left pending, never decided from those shots (a change voids only what it
	// touches).
	changes  []changedArea
	changed  map[runKey]bool
	voidedBy int // runs voided by the page's changes in this job
	// inOrder (a read that proves a chunk: want > 0) makes a pass stop, in each frame, at the
	// first pending run that only a reveal can show (not shown now: a scroll container's line
	// past its edge): the reveal loop shows it next, then the passes go on. Without it, a pass
	// proved every run after that one, and a phase that ran out of time before its reveals
	// handed out nothing past it: on a busy machine each read of Python's extending.html proved
	// the same 850 runs again and again, and the page never got past its 28,349th byte.
	inOrder bool
	moves   int // groups whose runs moved under the shots (moved)
}

// changedArea is where a change the page made during a group of shots may have drawn: rects in
// the frame's coordinates (25_changes.js), or anywhere (All).
type changedArea struct {
	All   bool         `json:"all"`
	Rects [][4]float64 `json:"rects"`
}

// voidChanged marks, after a group whose shots the page changed, the runs those changes may
// have drawn over: each run with a box in the group's bands that meets a changed place (every
// such run when a change can be anywhere). They stay pending; the rest of the group counts.
func (j *pixelJob) voidChanged(bands []band, all []runBox, counts map[runKey]*tally) {
	if j.changed == nil {
		j.changed = map[runKey]bool{}
	}
	anywhere := false
	var rects [][4]float64
	for _, c := range j.changes {
		anywhere = anywhere || c.All
		rects = append(rects, c.Rects...)
	}
	n := 0
	for _, rb := range all {
		k := rb.Key
		if j.changed[k] || !pendingRun(k) || !inBands(rb.Box, bands) {
			continue
		}
		hit := anywhere
		for _, r := range rects {
			if hit {
				break
			}
			hit = overlaps(rb.Box, r)
		}
		if hit {
			j.changed[k] = true
			delete(counts, k)
			n++
		}
	}
	j.voidedBy += n
	j.r.cfg.logf("bridge: visibility by rendering: the page changed itself while it was shot (anywhere: %v, %d places): %d runs not counted", anywhere, len(rects), n)
	j.tampered, j.changes = false, nil
}

// inBands says whether box meets one of bands.
func inBands(box [4]float64, bands []band) bool {
	for _, b := range bands {
		if overlaps(box, [4]float64{b.X0, b.Y0, b.X1 - b.X0, b.Y1 - b.Y0}) {
			return true
		}
	}
	return false
}

// meets says whether any of boxes meets b.
func meets(boxes [][4]float64, b [4]float64) bool {
	return slices.ContainsFunc(boxes, func(a [4]float64) bool { return overlaps(a, b) })
}

// overlaps says whether two boxes (x, y, w, h) meet.
func overlaps(a, b [4]float64) bool {
	return a[0] < b[0]+b[2] && b[0] < a[0]+a[2] && a[1] < b[1]+b[3] && b[1] < a[1]+a[3]
}

// twoFrames says whether the groups shot now are proven with two frames: the page's clocks
// stopped, nothing on it that draws by itself, and every run's paint can be turned off alone.
func (j *pixelJob) twoFrames() bool {
	return !j.r.cfg.fourFrames && (j.slowWhy == "" || j.r.cfg.trustMovers)
}

// errMoved stops a two-frame proof whose page scrolled while it was shot (a smooth scroll the
// page started, say): nothing in that group is decided.
var errMoved = errors.New("pixel phase: the page scrolled during the shots")

// remote says whether frame is drawn by another renderer than the main frame's.
func (j *pixelJob) remote(f *frameRuns) bool { return j.v.owner[f.id] != j.v.owner[j.v.mainID] }

// inView says whether box is inside the main frame's viewport.
func (j *pixelJob) inView(b [4]float64) bool {
	return b[0] >= j.view[0] && b[1] >= j.view[1] && b[0]+b[2] <= j.view[0]+j.view[2] && b[1]+b[3] <= j.view[1]+j.view[3]
}

// verdictsOf returns each frame's verdicts for the reader, why each withheld run is withheld
// (readerjs.Why*, by run), and the page's state after this phase. Every frame laid out gets a
// list. A run still pending is left for a later read (runLater), unless final: then it is
// withheld (the phase ran its course: ranCourse, and no pass showed it; or it decided nothing in
// time). A run withheld by an earlier read stays withheld, with its reason.
func (j *pixelJob) verdictsOf(final, ranCourse bool) (map[string][]int, map[string]map[int]string, *visState) {
	out := map[string][]int{}
	whys := map[string]map[int]string{}
	next := &visState{runs: map[string][]uint8{}, why: map[string]map[int]string{}, done: true, shrink: j.shrink()}
	if j.prev != nil {
		for id, rs := range j.prev.runs {
			if j.frames[id] != nil {
				continue
			}
			// A frame not laid out this time (gone, or not shown now): kept for a later read,
			// unless this one is final.
			if slices.Contains(rs, stPending) {
				if final {
					continue
				}
				next.done = false
			}
			next.runs[id], next.why[id] = rs, j.prev.why[id]
		}
	}
	for id, f := range j.frames {
		vs := make([]int, len(f.verdicts))
		st := make([]uint8, len(f.verdicts))
		why := map[int]string{}
		// A phase that stops early hands out, in each frame, the text before its first run
		// still pending: a run proven visible after it is left for the next read, which proves
		// it again (a proof holds for the DOM it saw), so that the reads append the page's text
		// in its order, not band by band (a sidebar's lines between the article's).
		// A run a reveal of this phase did not show (still not shown after its scroll
		// containers were scrolled) is withheld now, as a phase that ran its course withholds
		// it: left pending, it held back the text after it in every read, and a phase that
		// ran out of time before its end tried it again, and again.
		gone := func(i int) bool {
			return !final && f.unshown(i) && f.tried[i] && f.unsure[i] == ""
		}
		held := -1
		if !final {
			for i := range f.pending {
				if j.holdsBack(f, i) && !gone(i) {
					held = i
					break
				}
			}
		}
		for i, x := range f.verdicts {
			switch {
			case gone(i):
				st[i], x = stWithheld, runWithheld
				why[i] = readerjs.WhyNotShown
			case held >= 0 && i > held && !f.old[i] && x == runVisible:
				st[i], x = stPending, runLater
				next.done = false
			case f.old[i]:
				st[i] = j.prev.runs[id][i]
				switch st[i] {
				case stVisible:
					x = runServed
				case stWithheld:
					x = runWithheld
					why[i] = j.prev.why[id][i]
				default:
					x = runHidden
				}
			case !f.pending[i] && x == runVisible:
				st[i] = stVisible
			case !f.pending[i]:
				st[i], x = stHidden, runHidden
			case final:
				st[i], x = stWithheld, runWithheld
				switch {
				case f.unsure[i] != "":
					why[i] = f.unsure[i]
				case ranCourse:
					why[i] = readerjs.WhyNotShown
				default:
					why[i] = readerjs.WhyUnproven
				}
			default:
				st[i], x = stPending, runLater
				next.done = false
			}
			vs[i] = x
		}
		out[id], next.runs[id], whys[id], next.why[id] = vs, st, why, why
	}
	if !final && j.frames[j.v.mainID] == nil {
		// The phase stopped before it laid out the main frame (its time ran out under load):
		// nothing of the page is decided, and the next read goes on. (It read as done: a first
		// read then ended the page with every run pending, and none handed out.)
		next.done = false
	}
	return out, whys, next
}

// undecided counts the runs no pass decided.
func (j *pixelJob) undecided() int {
	n := 0
	for _, f := range j.frames {
		for _, p := range f.pending {
			if p {
				n++
			}
		}
	}
	return n
}

// stopNote says why the pixel phase stopped early, for the operator's log.
func stopNote(err error, final bool) string {
	switch {
	case err == nil:
		return ""
	case final:
		return fmt.Sprintf("; stopped, nothing decided: %v (the runs not decided are withheld)", err)
	}
	return fmt.Sprintf("; stopped: %v (the next read of the page goes on)", err)
}

// layout lays out one frame at off (its origin in main page coordinates) and, recursively, its
// visible child frames; reveal >= 0 scrolls run reveal into view first.
func (j *pixelJob) layout(ctx context.Context, frame string, off [2]float64, depth int) error {
	if depth > 8 || j.v.owner[frame] == nil {
		if j.slowWhy == "" {
			j.slowWhy = "a frame not laid out"
		}
		return nil
	}
	isChild := frame != j.v.mainID
	// The first layout of a frame in this read begins its change watch (25_changes.js).
	lay, err := j.r.evalFrame(ctx, j.v, frame, readerjs.ModeLayout, map[string]any{"child": isChild, "watch": j.frames[frame] == nil})
	if err != nil {
		return err
	}
	var l layoutRead
	if err := json.Unmarshal(lay.Layout, &l); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	f := j.frames[frame]
	if f == nil {
		n := len(l.Runs)
		f = &frameRuns{id: frame, verdicts: make([]int, n), pending: make([]bool, n), old: make([]bool, n), tried: map[int]bool{}, unsure: map[int]string{}}
		var prev []uint8
		if j.prev != nil && len(j.prev.runs[frame]) == n {
			prev = j.prev.runs[frame]
		} else if j.prev != nil && j.prev.runs[frame] != nil {
			j.r.cfg.logf("bridge: frame %s has %d runs, %d when last read: read again whole", frame, n, len(j.prev.runs[frame]))
		}
		for i, raw := range l.Runs {
			switch {
			case prev != nil && prev[i] != stPending:
				f.old[i], f.verdicts[i] = true, runHidden
				if prev[i] == stVisible {
					f.verdicts[i] = runVisible
				}
			case string(raw) == "0":
				f.verdicts[i] = runHidden
			default:
				f.verdicts[i], f.pending[i] = runWithheld, true
			}
		}
		j.frames[frame] = f
		j.order = append(j.order, frame)
	} else if len(l.Runs) != len(f.verdicts) || l.Differs {
		return fmt.Errorf("frame %s changed between layouts (%d runs, then %d, other nodes: %v)", frame, len(f.verdicts), len(l.Runs), l.Differs)
	} else {
		for _, k := range l.Replaced {
			if k >= 0 && k < len(f.pending) && f.pending[k] {
				f.pending[k], f.verdicts[k] = false, runWithheld
			}
		}
	}
	f.off = off
	f.still = l.Still
	f.lens = l.Lens
	f.movers = f.movers[:0]
	for _, m := range l.Movers {
		f.movers = append(f.movers, [4]float64{m[0] + off[0], m[1] + off[1], m[2], m[3]})
	}
	if l.Slow != "" && j.slowWhy == "" {
		j.slowWhy = l.Slow
	}
	if !isChild {
		j.view = l.View
	}
	f.inks = map[int][4]float64{}
	for k, m := range l.Inks {
		if i, err := strconv.Atoi(k); err == nil {
			f.inks[i] = m
		}
	}
	f.boxes = make([][][4]float64, len(l.Runs))
	for i, raw := range l.Runs {
		bs, err := entryBoxes(raw, off)
		if err != nil {
			return fmt.Errorf("layout run %d: %w", i, err)
		}
		f.boxes[i] = bs
	}
	// A child frame whose owner is not shown now has no boxes until it is again.
	shown := map[string]bool{}
	for _, o := range l.Owners {
		shown[o.ID] = true
	}
	for _, c := range f.children {
		if !shown[c] {
			j.unbox(c)
		}
	}
	f.children = f.children[:0]
	for _, o := range l.Owners {
		f.children = append(f.children, o.ID)
		if err := j.layout(ctx, o.ID, [2]float64{off[0] + o.X, off[1] + o.Y}, depth+1); err != nil {
			j.r.cfg.logf("bridge: frame not laid out (its text is withheld): %v", err)
		}
	}
	return nil
}

// unbox forgets where a frame's runs (and its children's) are shown.
func (j *pixelJob) unbox(frame string) {
	if f := j.frames[frame]; f != nil {
		f.boxes = nil
		for _, c := range f.children {
			j.unbox(c)
		}
	}
}

// paint sets the text paint of every laid-out frame: "off", "foreign", "runs" (only the runs of
// the last layout off), "on", or "restore" (undoes "runs" only).
func (j *pixelJob) paint(ctx context.Context, mode string) error {
	if mode == readerjs.PaintOn || mode == readerjs.PaintRestore {
		ctx2, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		ctx = ctx2
	}
	var first error
	remote := false
	for _, id := range j.order {
		if late := j.r.cfg.lateRemote; late != "" && !j.slow && j.v.owner[id] != j.v.owner[j.v.mainID] && (late == "all" || late == mode) {
			continue // a test's stand-in for a paint that reaches the surface after the shots
		}
		rr, err := j.r.evalFrame(ctx, j.v, id, readerjs.ModePaint, map[string]any{"paint": mode, "child": id != j.v.mainID})
		if err != nil && first == nil {
			first = err
		}
		if err == nil && mode == readerjs.PaintRuns && (rr.Exact == nil || !*rr.Exact) && first == nil {
			first = errInexact
		}
		if err == nil && (mode == readerjs.PaintRuns || mode == readerjs.PaintRestore) && j.twoFrames() && rr.Still != j.frames[id].still && first == nil {
			first = errMoved
		}
		if err == nil && rr.Tampered && !j.r.cfg.skipTamper {
			j.tampered = true
			c := changedArea{All: true}
			if rr.Changed != nil {
				c = changedArea{All: rr.Changed.All}
				off := j.frames[id].off
				for _, r := range rr.Changed.Rects {
					c.Rects = append(c.Rects, [4]float64{r[0] + off[0], r[1] + off[1], r[2], r[3]})
				}
			}
			j.changes = append(j.changes, c)
		}
		remote = remote || j.v.owner[id] != j.v.owner[j.v.mainID]
	}
	if remote && first == nil {
		// An out-of-process frame's new paint reaches the page's surface on its own compositor
		// frame, after the evaluation returns: give it time to be drawn before the next shot.
		wait := j.r.cfg.remoteWait
		if j.slow {
			wait = remoteSlowWait
		}
		first = sleepCtx(ctx, wait)
	}
	return first
}

// remotePaintWait is how long a shot waits for an out-of-process frame's new paint, and
// remoteSlowWait how long when the frame showed no text (recheckRemote).
const (
	remotePaintWait = 150 * time.Millisecond
	remoteSlowWait  = 750 * time.Millisecond
)

// inViewRun says whether all of a run's boxes are inside the main frame's viewport.
func (j *pixelJob) inViewRun(f *frameRuns, run int) bool {
	for _, b := range f.boxes[run] {
		if !j.inView(b) {
			return false
		}
	}
	return len(f.boxes[run]) > 0
}

// pass shoots what every frame shows now and decides the pending runs that have boxes.
func (j *pixelJob) pass(ctx context.Context) error {
	var all []runBox
	todo := false
	for _, id := range j.order {
		f := j.frames[id]
		for i, bs := range f.boxes {
			for _, b := range bs {
				rb := runBox{Key: runKey{f, i}, Box: b, Ink: pixels.InkBox(b, f.inks[i])}
				if j.r.cfg.noReach {
					rb.Ink = b
				}
				all = append(all, rb)
			}
			if bs != nil && f.pending[i] {
				todo = true
			}
		}
	}
	if !todo {
		return nil
	}
	j.passes++
	j.changed = nil              // a run a change voided in an earlier pass is shot again in this one
	stop := map[*frameRuns]int{} // inOrder: the first run a pass cannot show, by frame
	if j.inOrder {
		for _, id := range j.order {
			f := j.frames[id]
			for i := range f.pending {
				if f.unshown(i) && !f.tried[i] {
					stop[f] = i
					break
				}
			}
		}
	}
	var judge []runBox
	for _, rb := range all {
		// An out-of-process frame is drawn only inside the viewport: its runs elsewhere wait
		// for a pass that scrolls the page to them.
		if at, ok := stop[rb.Key.f]; ok && rb.Key.run > at {
			continue
		}
		if pendingRun(rb.Key) && (!j.remote(rb.Key.f) || j.inViewRun(rb.Key.f, rb.Key.run)) {
			judge = append(judge, rb)
		}
	}
	if len(judge) == 0 {
		return nil
	}
	// Only the start of each box is shot (pixels.SliceW px of it): a run is visible from
	// pixels.MinPixels drawn pixels on, anywhere in its boxes, so a slice can only find fewer of
	// them (the verdict errs towards hidden), and the shots shrink to a narrow column on most pages.
	slices := make([]runBox, len(judge))
	for i, rb := range judge {
		rb.Box[2] = min(rb.Box[2], pixels.SliceW)
		slices[i] = rb
	}
	bands, in := pixels.BandsOf(slices, j.bandH())
	// The band after which each run can be decided: the last one holding a slice of it.
	last := map[runKey]int{}
	for i, rb := range slices {
		k := rb.Key
		last[k] = max(last[k], in[i])
	}
	counts := map[runKey]*tally{}
	// Top down, a group of bands at a time: what a phase stopped by its deadline decided stays
	// decided, and the next read of the page goes on from there.
	for g0 := 0; g0 < len(bands); {
		// The first group of a phase is one band, and so is every group of a page whose phases
		// ran out of time before deciding anything (shrink): the least that makes progress.
		g1, h := g0, 0.0
		for g1 < len(bands) && (g1 == g0 || (j.groups > 0 && j.shrink() == 0 && h+bands[g1].Y1-bands[g1].Y0 <= maxGroupH)) {
			h += bands[g1].Y1 - bands[g1].Y0
			g1++
		}
		if h := j.r.cfg.beforeShots; h != nil {
			if err := h(ctx); err != nil {
				return err
			}
		}
		if err := j.shootGroup(ctx, bands[g0:g1], all, counts); err != nil {
			return err
		}
		j.groups++
		// The shots must show the layout the boxes were measured in: a shot beyond the viewport
		// may lay the page out again (Chromium resizes the view for it; on DocBook pages the
		// first such shot moves every line below by up to 18 px), and a run counted in a box
		// its glyphs have left is decided hidden in silence. The runs this group would decide
		// are measured again; if any moved, nothing of the group is counted and the pass starts
		// over on the new boxes (a bounded number of times; then they stay pending and are
		// withheld, counted, when the phase ends).
		var decide []runKey
		seen := map[runKey]bool{}
		for _, rb := range judge {
			if k := rb.Key; pendingRun(k) && last[k] < g1 && !seen[k] && !j.changed[k] {
				seen[k] = true
				decide = append(decide, k)
			}
		}
		var moved []runKey
		var err error
		if !j.r.cfg.noMoveCheck {
			if moved, err = j.moved(ctx, decide); err != nil {
				return err
			}
		}
		if len(moved) > 0 {
			j.moves++
			j.r.cfg.logf("bridge: visibility by rendering: %d runs moved while shot (the page laid out again): measured again", len(moved))
			if j.moves > maxMoves {
				for _, k := range moved {
					k.f.tried[k.run] = true // no reveal pass either: left pending, withheld at the end
					k.f.unsure[k.run] = readerjs.WhyMoved
				}
				return errLayoutMoves
			}
			return j.pass(ctx)
		}
		var now []runKey // decided by this group
		for _, rb := range judge {
			k := rb.Key
			if !pendingRun(k) || last[k] >= g1 {
				continue
			}
			if j.changed[k] {
				rb.Key.f.unsure[rb.Key.run] = readerjs.WhyChanged // pending: shot again, or withheld
				continue
			}
			rb.Key.f.pending[rb.Key.run] = false
			j.decided++
			now = append(now, k)
			rb.Key.f.verdicts[rb.Key.run] = verdictOf(counts[k])
		}
		if err := j.recheckRemote(ctx, bands[g0:g1], all, now); err != nil {
			return err
		}
		g0 = g1
		if n := j.r.cfg.phaseGroups; n > 0 && j.groups >= n && g0 < len(bands) {
			return errPhaseLimit
		}
		if j.want > 0 && g0 < len(bands) && j.proven() >= j.want {
			return errEnough
		}
	}
	return nil
}

// maxMoves bounds how many groups of one phase may find their runs moved after the shots (moved):
// past it the phase stops, and the runs that moved are left pending.
const maxMoves = 4

// moveTolerance is how far, in CSS px, a box may move between its measure and the check after
// the shots: less than a glyph's stroke.
const moveTolerance = 1

// errLayoutMoves stops a phase whose page kept laying itself out again under the shots.
var errLayoutMoves = errors.New("pixel phase: the page's layout kept moving under the shots")

// moved measures again the frames of keys and returns the runs whose boxes are not where they
// were measured (within moveTolerance); when any moved, every frame is laid out again and its
// boxes are the new ones. A frame whose runs are no longer the ones measured (a page whose run
// set depends on where it is scrolled: the reveal passes scroll it) cannot be compared run by
// run: it is left as it is, as the passes before this check left it.
//
// Each frame's runs are measured first alone (ModeBoxes: the cost of the group, not of the
// page); a frame where any of them moved, is gone or is no longer a run is then laid out whole
// and compared as that layout says.
func (j *pixelJob) moved(ctx context.Context, keys []runKey) ([]runKey, error) {
	byFrame := map[*frameRuns][]runKey{}
	for _, k := range keys {
		byFrame[k.f] = append(byFrame[k.f], k)
	}
	var out []runKey
	mainKept := true
	for f, ks := range byFrame {
		if f.boxes == nil {
			continue
		}
		if still, err := j.stillThere(ctx, f, ks); err != nil {
			return nil, err
		} else if still {
			continue
		}
		lay, err := j.r.evalFrame(ctx, j.v, f.id, readerjs.ModeLayout, map[string]any{"child": f.id != j.v.mainID})
		if err != nil {
			return nil, err
		}
		var l layoutRead
		if err := json.Unmarshal(lay.Layout, &l); err != nil {
			return nil, fmt.Errorf("layout: %w", err)
		}
		if len(l.Runs) != len(f.verdicts) || l.Differs {
			j.r.cfg.logf("bridge: frame %s has %d runs, %d when laid out (other nodes: %v): not compared after the shots", f.id, len(l.Runs), len(f.verdicts), l.Differs)
			mainKept = mainKept && f.id != j.v.mainID
			continue
		}
		for _, k := range ks {
			bs, err := entryBoxes(l.Runs[k.run], f.off)
			if err != nil {
				return nil, fmt.Errorf("layout run %d: unreadable", k.run)
			}
			if !sameBoxes(f.boxes[k.run], bs) {
				out = append(out, k)
			}
		}
	}
	if len(out) > 0 && !mainKept {
		return nil, nil // no layout of the page to start over on: as before the check
	}
	if len(out) > 0 {
		if err := j.layout(ctx, j.v.mainID, [2]float64{}, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stillThere says whether every run of ks (all of frame f) has the boxes it was measured with,
// measuring those runs alone (ModeBoxes). False when any moved or is gone, and when the mode
// found no layout to measure them by: moved then lays the frame out whole.
func (j *pixelJob) stillThere(ctx context.Context, f *frameRuns, ks []runKey) (bool, error) {
	only := make([]int, len(ks))
	for i, k := range ks {
		only[i] = k.run
	}
	rr, err := j.r.evalFrame(ctx, j.v, f.id, readerjs.ModeBoxes, map[string]any{"child": f.id != j.v.mainID, "only": only})
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		j.r.cfg.logf("bridge: runs not measured alone (the frame is laid out whole): %v", err)
		return false, nil
	}
	for _, k := range ks {
		raw, ok := rr.Boxes[strconv.Itoa(k.run)]
		if !ok {
			return false, nil
		}
		bs, err := entryBoxes(raw, f.off)
		if err != nil {
			return false, nil // "gone"
		}
		if !sameBoxes(f.boxes[k.run], bs) {
			return false, nil
		}
	}
	return true, nil
}

// entryBoxes is a run's boxes in the main frame's page coordinates, from what the reader's layout
// (or boxes) mode reports of it in its frame, whose origin is off: nil for null (not shown now)
// and 0 (beyond what scrolling shows); an error for anything else that is not a list of boxes.
func entryBoxes(raw json.RawMessage, off [2]float64) ([][4]float64, error) {
	if s := string(raw); s == "null" || s == "0" {
		return nil, nil
	}
	var bs [][4]float64
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i][0] += off[0]
		bs[i][1] += off[1]
	}
	return bs, nil
}

// sameBoxes says whether now are old, within moveTolerance.
func sameBoxes(old, now [][4]float64) bool {
	if len(now) != len(old) {
		return false
	}
	for i, b := range old {
		for c := range 4 {
			if d := b[c] - now[i][c]; d > moveTolerance || d < -moveTolerance {
				return false
			}
		}
	}
	return true
}

// recheckRemote shoots a group again, waiting longer for each paint, when an out-of-process
// frame showed no text at all in it: on a busy machine that frame's paint may have reached the
// surface too late for the shots (the shot order makes that err towards hidden). Only such a
// frame's runs are decided again, from the new shots alone.
func (j *pixelJob) recheckRemote(ctx context.Context, bands []band, all []runBox, now []runKey) error {
	shown := map[*frameRuns]bool{}
	for _, k := range now {
		if j.remote(k.f) && k.f.verdicts[k.run] == runVisible {
			shown[k.f] = true
		}
	}
	var again []runKey
	for _, k := range now {
		if j.remote(k.f) && !shown[k.f] {
			again = append(again, k)
			k.f.pending[k.run] = true
		}
	}
	if len(again) == 0 {
		return nil
	}
	counts := map[runKey]*tally{}
	j.slow = true
	err := j.shootGroup(ctx, bands, all, counts)
	j.slow = false
	if err != nil {
		j.decided -= len(again) // left for the next read
		return err
	}
	for _, k := range again {
		k.f.pending[k.run] = false
		k.f.verdicts[k.run] = verdictOf(counts[k])
	}
	return nil
}

// maxShrink is how many times a page's bands are halved after phases that decided nothing;
// past it, such a phase withholds what is pending.
const maxShrink = 3

// shrink is how many phases of this page ran out of time having decided nothing.
func (j *pixelJob) shrink() int {
	if j.prev == nil {
		return 0
	}
	return j.prev.shrink
}

// bandH is the tallest band: pixels.MaxBandH, halved for each phase of the page that decided nothing.
func (j *pixelJob) bandH() float64 { return pixels.MaxBandH / float64(int(1)<<j.shrink()) }

// errPhaseLimit stops a phase after the groups the configuration allows (tests).
var errPhaseLimit = errors.New("pixel phase: group limit")

// errEnough stops a phase that proved the text its read returns (want): the next read of the
// page goes on from there.
var errEnough = errors.New("pixel phase: a chunk's text proven")

// holdsBack says whether run i of f holds back the text after it in a read that stops early: it
// is pending, and no change of the page's voided it (a clock's text, ticking, may never be proven
// while the page keeps changing it). verdictsOf and proven hold back alike.
func (j *pixelJob) holdsBack(f *frameRuns, i int) bool {
	return f.pending[i] && !j.changed[runKey{f, i}]
}

// proven counts the characters of the runs this phase proved visible that the read hands out:
// in each frame, those before its first run still pending (verdictsOf holds back the rest, so
// that text arrives in the page's order).
func (j *pixelJob) proven() int {
	n := 0
	for _, f := range j.frames {
		for i := range f.verdicts {
			if f.old[i] {
				continue
			}
			if j.holdsBack(f, i) {
				break
			}
			if f.verdicts[i] == runVisible && i < len(f.lens) {
				n += f.lens[i]
			}
		}
	}
	return n
}

// maxGroupH bounds, in CSS px, the bands shot between two paint changes: the unit of progress of
// a phase that runs out of time.
const maxGroupH = 2 * pixels.MaxBandH

// shootGroup shoots bands four times, in this order: as the page is (A), with all text paint
// off (B), with only the paint of text that is not a run off (C), and as the page is again (A2);
// then counts each pending run's drawn pixels. The order makes a paint that reaches the surface
// late (an out-of-process frame's, on a busy machine) err towards hidden: a late B equals A (no
// pixel drawn by text), a late C still has no text where A has the run (every such pixel counts
// as another text's), and a late A2 only leaves pixels unstable.
func (j *pixelJob) shootGroup(ctx context.Context, bands []band, all []runBox, counts map[runKey]*tally) error {
	t := j.v.owner[j.v.mainID]
	shootAll := func() ([]image.Image, error) {
		out := make([]image.Image, len(bands))
		for i, b := range bands {
			start := time.Now()
			img, err := shoot(ctx, t, b.X0, b.Y0, b.X1-b.X0, b.Y1-b.Y0)
			j.r.cfg.took("shot", start)
			if err != nil {
				return nil, err
			}
			j.shots++
			out[i] = img
		}
		return out, nil
	}
	if j.twoFrames() {
		done, err := j.shootTwo(ctx, bands, all, counts, shootAll)
		if done || err != nil {
			return err
		}
	}
	a, err := shootAll()
	if err != nil {
		return err
	}
	var b, c []image.Image
	err = j.paint(ctx, readerjs.PaintOff)
	if err == nil {
		b, err = shootAll()
	}
	if err == nil {
		err = j.paint(ctx, readerjs.PaintForeign)
	}
	if err == nil {
		c, err = shootAll()
	}
	if perr := j.paint(ctx, readerjs.PaintOn); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	a2, err := shootAll()
	if err != nil {
		return err
	}
	for i, bd := range bands {
		pixels.CountBand(bd, all, pendingRun, j.moverBoxes(), a[i], b[i], c[i], a2[i], counts)
	}
	if j.tampered {
		j.voidChanged(bands, all, counts)
	}
	return nil
}

// shootTwo is the two-frame proof of a group: A, as is, and D, with exactly the runs' paint off.
// Nothing else differs between them (the clocks are stopped, nothing draws by itself, the
// scroll positions are checked, and so is the paint of everything that inherits from a run's
// parent), so a pixel that differs is drawn by a run: A serves as C and as A2. It returns false,
// having shot nothing it counts, when the runs' paint could not be turned off alone: the page
// then takes the four-frame proof.
//
// An out-of-process frame is the exception to "nothing else differs": its renderer submits its
// paint to the page's surface on its own schedule, so what it draws may reach the surface between
// A and D (its first paint, on a busy machine), and every pixel of it would count as a run's
// (text hidden over it read). A page with such a frame gets a third shot, A2, after the runs'
// paint is restored, and a pixel counts only where A and A2 agree, as in the four-frame proof;
// then a second D, and a pixel of D counts only where both Ds agree.
func (j *pixelJob) shootTwo(ctx context.Context, bands []band, all []runBox, counts map[runKey]*tally, shootAll func() ([]image.Image, error)) (bool, error) {
	late := j.r.cfg.lateFirst && !j.slow
	remote := j.anyRemote() // the frames laid out do not change during the group
	if late {
		if err := j.paintRemote(ctx, readerjs.PaintOff, shootAll); err != nil {
			return true, err
		}
	}
	var stale []image.Image
	if j.r.cfg.staleD && !j.slow && remote {
		// The staleD hook: a shot of the page with the out-of-process frames' text off, taken
		// now and handed to shootD as its first shot of D (the frames painted again before A).
		if err := j.paintRemote(ctx, readerjs.PaintOff, shootAll); err != nil {
			return true, err
		}
		var err error
		if stale, err = shootAll(); err != nil {
			return true, err
		}
		if err := j.paintRemote(ctx, readerjs.PaintOn, shootAll); err != nil {
			return true, err
		}
	}
	a, err := shootAll()
	if err != nil {
		return true, err
	}
	lagged := j.r.cfg.lagged && !j.slow && remote
	if lagged {
		if err := j.paintRemote(ctx, readerjs.PaintOff, shootAll); err != nil {
			return true, err
		}
	}
	if late {
		if err := j.paintRemote(ctx, readerjs.PaintOn, shootAll); err != nil {
			return true, err
		}
	}
	var hook func() error
	if lagged {
		hook = func() error { return j.paintRemote(ctx, readerjs.PaintOn, shootAll) }
	}
	d, err := j.shootOff(ctx, a, stale, shootAll, hook)
	if errors.Is(err, errInexact) {
		j.slowWhy = "a run's paint not turned off alone"
		return false, nil
	}
	if err != nil {
		return true, err
	}
	a2 := a
	if remote {
		// A2: A shot again once the restore reached the surface (shootA).
		if a2, err = j.shootA(ctx, a, shootAll); err != nil {
			return true, err
		}
		if j.r.cfg.staleA2 && !j.slow {
			a2 = slices.Clone(a) // the test's stand-in for a surface shown stale in A2: it looks like A
		}
		// A second D after A2: the runs' paint off again, shot and confirmed as the first. A
		// frame's surface may lag its paint by any time on a busy machine, but it shows its
		// states in order: a pixel that shows one thing in A and A2 and another in both shots of
		// D changed with the runs' paint, the only change that went off, on, off again. A late
		// surface shows D1 the frame's earlier state (its text turned off by a previous change
		// not yet drawn in A: the generated content of the suite's load flake) and D2 its later
		// one: they differ, and that pixel is no evidence (confirmed takes A's value).
		d2, err := j.shootOff(ctx, a, nil, shootAll, nil)
		if errors.Is(err, errInexact) {
			j.slowWhy = "a run's paint not turned off alone"
			return false, nil
		}
		if err != nil {
			return true, err
		}
		if !j.r.cfg.oneD {
			for i := range d {
				d[i] = pixels.Confirmed(a[i], d[i], d2[i])
			}
		}
		// A third A, last: the frame's surface may show, in one shot, a state older than the
		// one painted (blank while the frame submits again), and an A2 shot then can look like
		// an A whose frame had not drawn yet (what a late first paint leaves out of A), so that
		// what the frame drew since counts as a run's. A pixel is stable only where A, A2 and
		// A3 agree: a surface that showed its latest state in any of the later shots makes it
		// unstable. (Seen twice under heavy load, never in CI: TestVisibilityLatePaint/first,
		// a hidden marker read.) And a fourth, after the frame's paint wait: A3 too can be a
		// stale surface that looks like A (CI, load 13-25: TestVisibilityLatePaint/first, stale
		// A2, the marker over generated content read once A2 and A3 both showed the frame's
		// state of A). Each shot that shows the latest state unsettles what the frame drew
		// since; two stale shots in a row, a paint wait apart, are rarer than one.
		if !j.r.cfg.oneA2 {
			a3, err := j.shootA(ctx, a, shootAll)
			if err != nil {
				return true, err
			}
			if err := sleepCtx(ctx, j.r.cfg.remoteWait); err != nil {
				return true, err
			}
			a4, err := shootAll()
			if err != nil {
				return true, err
			}
			merged := make([]image.Image, len(a2)) // a new slice: a2 may be a's (staleA2)
			for i := range a2 {
				merged[i] = pixels.StableIn(a[i], a2[i], a3[i], a4[i])
			}
			a2 = merged
		}
	}
	j.twos++
	if j.tampered && !remote {
		// The page changed during the shots: what changed is voided (voidChanged), and the rest
		// counts only where a third shot, A2, shows what A showed (a change may draw outside
		// the boxes it reports: generated content, a rule that matches another element).
		if a2, err = shootAll(); err != nil {
			return true, err
		}
	}
	for i, bd := range bands {
		pixels.CountBand(bd, all, pendingRun, j.moverBoxes(), a[i], d[i], a[i], a2[i], counts)
	}
	if !remote && !j.tampered && !j.r.cfg.noSplit {
		if err := j.split(ctx, bands, all, a, d, counts, shootAll); err != nil {
			return true, err
		}
	}
	if j.tampered {
		j.voidChanged(bands, all, counts)
	}
	return true, nil
}

// maxSplits bounds the extra shots of a group's split (the classes of runs shot apart).
const maxSplits = 3

// split shoots apart the runs of a group whose boxes overlap another run's and that D did not
// prove drawn: a pixel in two runs' boxes is no evidence when both go off at once, and a glyph
// drawn where the next line's box begins (an underscore in a code block whose line height is
// under the font's height: Python's manual) was withheld as hidden. Each class of such runs, no
// two of whose boxes overlap, has only its runs' paint turned off (PaintSome; with them every
// run whose parent's paint changed, which the page reports) and is shot again: a pixel counts
// for a run where it differs from A and no other run that went off has a box. The page is what
// A shot but for that paint, so the rule is D's with fewer runs off; a run's count is the larger
// of its two (they count the same pixels, and more here).
func (j *pixelJob) split(ctx context.Context, bands []band, all []runBox, a, d0 []image.Image, counts map[runKey]*tally, shootAll func() ([]image.Image, error)) error {
	boxes := map[runKey][][4]float64{}
	var cands []runKey
	for _, rb := range all {
		k := rb.Key
		if !pendingRun(k) || !inBands(rb.Box, bands) {
			continue
		}
		if tl := counts[k]; tl != nil && tl.Drawn >= pixels.MinPixels {
			continue
		}
		if boxes[k] == nil {
			cands = append(cands, k)
		}
		boxes[k] = append(boxes[k], rb.Box)
	}
	overlapsOther := func(k runKey) bool {
		for _, rb := range all {
			if rb.Key != k && meets(boxes[k], rb.Reach()) {
				return true
			}
		}
		return false
	}
	var classes [][]runKey
	for _, k := range cands {
		if !overlapsOther(k) {
			continue
		}
		placed := false
		for ci, cl := range classes {
			clash := false
			for _, m := range cl {
				for _, c := range boxes[m] {
					clash = clash || meets(boxes[k], c)
				}
			}
			if !clash {
				classes[ci] = append(cl, k)
				placed = true
				break
			}
		}
		if !placed && len(classes) < maxSplits {
			classes = append(classes, []runKey{k})
		}
	}
	for _, cl := range classes {
		only := map[string][]int{}
		for _, k := range cl {
			only[k.f.id] = append(only[k.f.id], k.run)
		}
		off, err := j.paintSome(ctx, only)
		var d []image.Image
		if err == nil {
			d, err = shootAll()
		}
		if perr := j.paint(ctx, readerjs.PaintRestore); err == nil {
			err = perr
		}
		if errors.Is(err, errInexact) {
			continue // nothing counted of this class: its runs stay as D left them
		}
		if err != nil {
			return err
		}
		var sub []runBox
		for _, rb := range all {
			if off[rb.Key.f.id][rb.Key.run] {
				sub = append(sub, rb)
			}
		}
		more := map[runKey]*tally{}
		for i, bd := range bands {
			pixels.CountBand(bd, sub, pendingRun, j.moverBoxes(), a[i], d[i], a[i], a[i], more)
		}
		for _, k := range cl {
			m := more[k]
			if m == nil {
				continue
			}
			// Text drawn over other text: the other run's ink inside this run's boxes (it
			// changed with every run's paint, not with this one's) outweighs a quarter of
			// this run's own. Such a run stays as D left it, as it was before the split (its
			// overlap was no evidence): a line overprinted on another is not read for the
			// pixels of it that show between the other's glyphs.
			other := 0
			for i, bd := range bands {
				other = min(other+pixels.OtherInk(bd, boxes[k], a[i], d0[i], d[i]), math.MaxInt32)
			}
			if other*4 > m.Drawn {
				continue
			}
			tl := counts[k]
			if tl == nil {
				tl = &tally{}
				counts[k] = tl
			}
			tl.Drawn, tl.Tallest = max(tl.Drawn, m.Drawn), max(tl.Tallest, m.Tallest)
		}
		j.splits++
	}
	return nil
}

// paintSome turns off the paint of the runs only names, by frame (PaintSome), and returns every
// run whose paint went off, by frame. errInexact: not those runs' paint alone; errMoved: the page
// scrolled.
func (j *pixelJob) paintSome(ctx context.Context, only map[string][]int) (map[string]map[int]bool, error) {
	out := map[string]map[int]bool{}
	for _, id := range j.order {
		if len(only[id]) == 0 {
			continue
		}
		rr, err := j.r.evalFrame(ctx, j.v, id, readerjs.ModePaint, map[string]any{"paint": readerjs.PaintSome, "only": only[id], "child": id != j.v.mainID})
		if err != nil {
			return nil, err
		}
		if rr.Exact == nil || !*rr.Exact {
			return nil, errInexact
		}
		if rr.Still != j.frames[id].still {
			return nil, errMoved
		}
		out[id] = map[int]bool{}
		for _, i := range rr.Off {
			out[id][i] = true
		}
	}
	return out, nil
}

// shootA shoots A again after the runs' paint was restored, on a page with an out-of-process
// frame: the restore may itself reach the surface late, so it is shot again, waiting, until it
// shows what A showed (at most a2Tries shots). What a frame drew after A stays in every shot, and
// its pixels stay unstable, whatever the number of tries.
func (j *pixelJob) shootA(ctx context.Context, a []image.Image, shootAll func() ([]image.Image, error)) ([]image.Image, error) {
	for try := 1; ; try++ {
		again, err := shootAll()
		if err != nil {
			return nil, err
		}
		if try == a2Tries || pixels.StableShots(a, again) {
			return again, nil
		}
		if err := sleepCtx(ctx, remoteSlowWait); err != nil {
			return nil, err
		}
	}
}

// shootOff turns exactly the runs' paint off, shoots D (shootD), runs hook (a test's, or nil)
// and restores the paint. errInexact: the runs' paint could not be turned off alone.
func (j *pixelJob) shootOff(ctx context.Context, a, stale []image.Image, shootAll func() ([]image.Image, error), hook func() error) ([]image.Image, error) {
	err := j.paint(ctx, readerjs.PaintRuns)
	var d []image.Image
	if err == nil {
		d, err = j.shootD(ctx, a, stale, shootAll)
	}
	if hook != nil && err == nil {
		err = hook()
	}
	if perr := j.paint(ctx, readerjs.PaintRestore); err == nil {
		err = perr
	}
	return d, err
}

// a2Tries bounds the shots of A2 on a page with an out-of-process frame (shootTwo), and the
// second shots of D (shootD).
const a2Tries = 3

// shootD shoots D, the runs' paint off. On a page with an out-of-process frame, D is shot again
// after the frame's paint wait until two shots in a row agree (at most a2Tries more), as A is
// confirmed by A2: that frame's surface can show, in any one shot, a state that is not the one
// painted (late, or without the frame's content while it submits again: the fresh-clone suite
// read text hidden over generated content in such a frame, the generated content missing from
// D alone). A pixel of D that no second shot confirms takes A's value (confirmed): no evidence.
// A surface stale across both shots of D (a frame starved for longer than the waits) is caught
// by shootTwo's second D, as long as the surface shows the frame's states in their order; one
// that shows an older state after a newer one would be caught only by a mark the frame draws in
// the same shot (proving its surface current), which is not built.
//
// stale (tests: the staleD hook) replaces the first shot of D.
func (j *pixelJob) shootD(ctx context.Context, a, stale []image.Image, shootAll func() ([]image.Image, error)) ([]image.Image, error) {
	d, err := shootAll()
	if err != nil || !j.anyRemote() {
		return d, err
	}
	if stale != nil {
		d = stale // the test's stand-in for a surface shown stale in one shot of D
	}
	for try := 1; ; try++ {
		if err := sleepCtx(ctx, j.r.cfg.remoteWait); err != nil {
			return nil, err
		}
		d2, err := shootAll()
		if err != nil {
			return nil, err
		}
		if pixels.StableShots(d, d2) {
			return d2, nil
		}
		if try == a2Tries {
			out := make([]image.Image, len(d))
			for i := range d {
				out[i] = pixels.Confirmed(a[i], d[i], d2[i])
			}
			return out, nil
		}
		d = d2
	}
}

// anyRemote says whether a frame laid out is drawn by another renderer than the main frame's.
func (j *pixelJob) anyRemote() bool {
	for _, id := range j.order {
		if j.remote(j.frames[id]) {
			return true
		}
	}
	return false
}

// paintRemote sets the text paint of the out-of-process frames only (the test hooks lateFirst,
// staleD and lagged), and waits for it to be drawn: remoteSlowWait, then until the shots show a
// change (at most hookWait more), so that a hook enacts its scenario on a busy machine too (a
// change that draws nothing in the bands, such as text under an overlay, waits it out).
func (j *pixelJob) paintRemote(ctx context.Context, mode string, shootAll func() ([]image.Image, error)) error {
	before, err := shootAll()
	if err != nil {
		return err
	}
	for _, id := range j.order {
		if j.remote(j.frames[id]) {
			if _, err := j.r.evalFrame(ctx, j.v, id, readerjs.ModePaint, map[string]any{"paint": mode}); err != nil {
				return err
			}
		}
	}
	if err := sleepCtx(ctx, remoteSlowWait); err != nil {
		return err
	}
	for end := time.Now().Add(hookWait); time.Now().Before(end); {
		now, err := shootAll()
		if err != nil {
			return err
		}
		if !pixels.StableShots(before, now) {
			// Drawn; and once more, so that a frame drawn in parts is drawn whole.
			return sleepCtx(ctx, remotePaintWait)
		}
		if err := sleepCtx(ctx, remotePaintWait); err != nil {
			return err
		}
	}
	return nil
}

// hookWait bounds how long paintRemote waits for a test hook's paint change to be drawn.
const hookWait = 5 * time.Second

// errInexact: turning the runs' paint off changed the paint of something that is not a run.
var errInexact = errors.New("pixel phase: the runs' paint not turned off alone")

// moverBoxes is where what draws by itself is, in every frame shown now (layoutRead.Movers).
func (j *pixelJob) moverBoxes() [][4]float64 {
	if j.r.cfg.trustMovers {
		return nil
	}
	var out [][4]float64
	for _, id := range j.order {
		if f := j.frames[id]; f.boxes != nil {
			out = append(out, f.movers...)
		}
	}
	return out
}

// maxReveals bounds the scroll-and-shoot passes of one read; runs still not shown after them are
// withheld.
const maxReveals = 12

// scrollMain scrolls the main frame's window to y. Page coordinates do not move with it; the
// viewport does.
func (j *pixelJob) scrollMain(ctx context.Context, y float64) error {
	rr, err := j.r.evalFrame(ctx, j.v, j.v.mainID, readerjs.ModeScroll, map[string]any{"y": y})
	if err != nil {
		return err
	}
	var l layoutRead
	if err := json.Unmarshal(rr.Layout, &l); err != nil {
		return fmt.Errorf("scroll: %w", err)
	}
	j.view = l.View
	if f := j.frames[j.v.mainID]; f != nil {
		f.still = l.Still
	}
	return nil
}

// pixelVerdicts runs the pixel phase over every frame: lay out, shoot what is shown, then
// scroll scroll containers and child frames to show the runs not shown yet, a pass each, until
// every run is decided, maxReveals passes were made or ctx ends. It returns the verdicts it has
// (runs not decided are withheld) and the error that stopped it, if any.
func (pr *pageReader) pixelVerdicts(ctx context.Context, v *pageView, prev *visState, want int) (*pixelJob, error) {
	j := &pixelJob{r: pr, v: v, frames: map[string]*frameRuns{}, prev: prev, want: want}
	// The page's clocks stopped for the proof: a frozen page still runs its CSS animations,
	// transitions and Web Animations; stopped, they draw the same in every shot (an animated
	// run is read as drawn at that moment).
	if err := clocks(ctx, v, 0); err != nil {
		j.slowWhy = "clocks not stopped: " + err.Error()
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := clocks(uctx, v, 1); err != nil {
			pr.cfg.logf("bridge: clocks not restarted: %v", err)
		}
	}()
	// A shot beyond the viewport lays some pages out again, once (Chromium resizes the view
	// for it: on DocBook pages every line below moves by up to 18 px), and the pass whose boxes
	// were measured before it starts over (moved). A one-pixel shot first lays the page out as
	// the shots will see it; its error is the next shot's too.
	if busy := pr.cfg.busyPhase; busy != nil {
		if err := busy(ctx); err != nil {
			return j, err
		}
	}
	if _, err := shoot(ctx, v.owner[v.mainID], 0, 0, 1, 1); err != nil {
		return j, err
	}
	if err := j.layout(ctx, v.mainID, [2]float64{}, 0); err != nil {
		return j, err
	}
	j.inOrder = want > 0
	if err := j.pass(ctx); err != nil {
		return j, err
	}
	// The window's scroll position as the page had it: the read after the passes must see the
	// same runs (fixed boxes move with the window).
	home := j.view[1]
	defer func() {
		if j.view[1] != home {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := j.scrollMain(uctx, home); err != nil {
				pr.cfg.logf("bridge: scroll back: %v", err)
			}
		}
	}()
	for reveals := 0; reveals < maxReveals; {
		var f *frameRuns
		run := -1
		for _, id := range j.order {
			g := j.frames[id]
			for i, p := range g.pending {
				if p && !g.tried[i] {
					f, run = g, i
					break
				}
			}
			if f != nil {
				break
			}
		}
		if f == nil {
			break
		}
		f.tried[run] = true
		reveals++
		if bs := f.boxes[run]; bs != nil && j.remote(f) {
			// Shown in its frame, but the frame is out of the viewport: scroll the page to it.
			if err := j.scrollMain(ctx, max(0, bs[0][1]-20)); err != nil {
				return j, err
			}
			if err := sleepCtx(ctx, remotePaintWait); err != nil {
				return j, err
			}
		} else {
			if _, err := pr.evalFrame(ctx, v, f.id, readerjs.ModeLayout, map[string]any{"child": f.id != v.mainID, "reveal": run}); err != nil {
				return j, err
			}
			if err := j.layout(ctx, f.id, f.off, 0); err != nil {
				return j, err
			}
			if j.remote(f) {
				delete(f.tried, run) // it may need the page scrolled to it next
			}
		}
		if err := j.pass(ctx); err != nil {
			return j, err
		}
	}
	if j.inOrder {
		// The runs after the last one the reveals showed (or gave up on) are shot as every pass
		// shoots them: a phase that runs its course has shot every run it could.
		j.inOrder = false
		if err := j.pass(ctx); err != nil {
			return j, err
		}
	}
	return j, nil
}

// clocks sets the playback rate of the document timelines of every target (the Animation
// domain): 0 stops the CSS animations, transitions and Web Animations of all its frames, 1 lets
// them run again. It returns the first error: a target whose clocks may still run.
func clocks(ctx context.Context, v *pageView, rate float64) error {
	var first error
	for _, t := range v.targets {
		if err := cdpCall(ctx, t.sess, "Animation.setPlaybackRate", map[string]any{"playbackRate": rate}, nil); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// freeze sets the lifecycle state of every target's page ("frozen" or "active").
func freeze(ctx context.Context, v *pageView, state string) error {
	for i, t := range v.targets {
		if err := cdpCall(ctx, t.sess, "Page.setWebLifecycleState", map[string]any{"state": state}, nil); err != nil && i == 0 {
			return err
		}
	}
	return nil
}
