package bridge

import "testing"

// TestVerdictsNothingLaidOut: a phase that stopped before it laid out the main frame (its time ran
// out under load) decided nothing, and the page is not done: the next read goes on. It read as
// done, so that a page's first read ended it with every run pending and no text (tests/realweb,
// argparse.html over https in make test). A final phase is done whatever it reached.
func TestVerdictsNothingLaidOut(t *testing.T) {
	j := &pixelJob{v: &pageView{mainID: "main"}, frames: map[string]*frameRuns{}}
	if _, _, next := j.verdictsOf(false, false); next.done {
		t.Errorf("a phase that laid out nothing left the page done")
	}
	if _, _, next := j.verdictsOf(true, false); !next.done {
		t.Errorf("a final phase left the page not done")
	}
}
