package countio

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// emptyFirst returns no bytes and no error once, then reads r.
type emptyFirst struct {
	r    io.Reader
	done bool
}

func (e *emptyFirst) Read(p []byte) (int, error) {
	if !e.done {
		e.done = true
		return 0, nil
	}
	return e.r.Read(p)
}

func TestReader(t *testing.T) {
	var total, calls int64
	r := Reader(&emptyFirst{r: iotest.OneByteReader(strings.NewReader("abc"))}, func(n int64) { total += n; calls++ })
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "abc" {
		t.Fatalf("read %q, %v", b, err)
	}
	if total != 3 || calls != 3 {
		t.Errorf("counted %d bytes in %d calls, want 3 in 3 (a read of no bytes is not counted)", total, calls)
	}
}
