package bridge

import (
	"errors"
	"testing"

	"github.com/browser-agent/browser-agent/policy"
)

// TestRedirects: the one redirect walk, without a browser. Each Location is decided relative to
// the URL it came from; a missing Location, a denied hop, a hop past the cap and a loop end the
// walk with the decision to record, and an allowed hop moves URL() on.
func TestRedirects(t *testing.T) {
	pol, err := policy.Parse([]byte(`version: 1
sites:
  - origin: http://127.0.0.1:8081
    read:
      - /a
      - /b
      - /c
      - /d
models:
  approved: [m]
limits:
  max_redirect_hops: 2
`), "redirect walk")
	if err != nil {
		t.Fatal(err)
	}
	const o = "http://127.0.0.1:8081"
	type hop struct {
		status int
		loc    string
	}
	denied := func(err error) bool { var de *DeniedError; return errors.As(err, &de) }
	tests := []struct {
		name   string
		hops   []hop
		ends   func(error) bool // nil: every hop allowed
		reason string           // the reason recorded for the last hop
		final  string           // URL() at the end
		taken  int              // len(Hops()) at the end
	}{
		{"allowed chain", []hop{{302, "/b"}, {301, o + "/c"}}, nil, policy.ReasonAllowed, o + "/c", 2},
		{"denied hop", []hop{{302, "/b"}, {302, "/records/1/delete"}}, denied, policy.ReasonWriteWord, o + "/b", 2},
		{"off-site hop", []hop{{307, "http://example.com/a"}}, denied, policy.ReasonHost, o + "/a", 1},
		{"past the cap", []hop{{302, "/b"}, {302, "/c"}, {302, "/d"}}, func(err error) bool { return errors.Is(err, ErrHopLimit) }, ReasonHopLimit, o + "/c", 3},
		{"loop", []hop{{302, "/b"}, {302, "/a"}}, func(err error) bool { return errors.Is(err, ErrRedirectLoop) }, ReasonRedirectLoop, o + "/b", 2},
		{"no location", []hop{{302, ""}}, func(err error) bool { return err != nil && !denied(err) }, ReasonRedirectNoLoc, o + "/a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewRedirects(pol, o+"/a")
			var d policy.Decision
			var err error
			for i, h := range tt.hops {
				var n int
				n, d, err = w.Follow(h.status, h.loc)
				if n != i+1 {
					t.Errorf("hop %d numbered %d", i+1, n)
				}
				if err != nil && i != len(tt.hops)-1 {
					t.Fatalf("hop %d ended the walk early: %v", i+1, err)
				}
			}
			switch {
			case tt.ends == nil && (err != nil || !d.Allowed()):
				t.Errorf("got %v, decision %+v; want every hop allowed", err, d)
			case tt.ends != nil && (!tt.ends(err) || d.Allowed()):
				t.Errorf("got %v, decision %+v; want the walk ended with a deny", err, d)
			}
			if d.Reason != tt.reason {
				t.Errorf("recorded reason %q, want %q", d.Reason, tt.reason)
			}
			if got := w.URL(); got != tt.final {
				t.Errorf("URL() = %s, want %s", got, tt.final)
			}
			if got := len(w.Hops()); got != tt.taken {
				t.Errorf("%d hops, want %d", got, tt.taken)
			}
		})
	}
}
