package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// The faults a store must survive, made real: a full disk and a file nobody may write. The audit
// store's tests and the command line's use them.

// SmallDisk mounts a tmpfs of size bytes on a fresh directory and returns it; it is unmounted
// when the test ends. It needs root: elsewhere the test is skipped, with the reason.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// FillDisk writes to a file in dir until its disk is full. Any error other than ENOSPC fails the
// test.
func FillDisk(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return
		}
	}
}

// ReadOnly makes path read-only even for root: chattr +i where the file system has it (undone
// when the test ends), else mode 0400, which is enough for a user other than root. As root
// without chattr +i the test is skipped, with the reason.
func ReadOnly(t testing.TB, path string) {
	t.Helper()
	if err := exec.Command("chattr", "+i", path).Run(); err == nil {
		t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
		return
	}
	if os.Geteuid() == 0 {
		t.Skip("cannot make a file read-only for root here (no chattr +i)")
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
}
