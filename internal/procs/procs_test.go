package procs

import (
	"os"
	"testing"
)

// TestSelf: this process is among Parents, under its own parent, and holds some resident memory.
func TestSelf(t *testing.T) {
	pp, ok := Parents()[os.Getpid()]
	if !ok || pp != os.Getppid() {
		t.Fatalf("Parents()[self] = %d, %v; want %d, true", pp, ok, os.Getppid())
	}
	if rss := RSS(os.Getpid()); rss <= 0 {
		t.Fatalf("RSS(self) = %d; want > 0", rss)
	}
}
