package testutil

import (
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	n := 0
	if !Eventually(time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition true on the third check: got n = %d", n)
	}
	n = 0
	if Eventually(3*PollInterval, func() bool { n++; return false }) {
		t.Errorf("a condition never true reported true")
	}
	if n < 2 {
		t.Errorf("a condition never true was checked %d times, want until the deadline and once after", n)
	}
}
