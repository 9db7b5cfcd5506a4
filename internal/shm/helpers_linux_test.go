//go:build linux

package shm_test

import (
	"net"
	"os"
	"testing"

	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// create makes a sealed object of size bytes, closed at the test's end.
func create(t testing.TB, size int) int {
	t.Helper()
	fd, err := shm.Create("shm-test", size)
	if err != nil {
		t.Fatalf("Create(%d): %v", size, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// connPair returns the two ends of a Socketpair as *net.UnixConn, closed
// at the test's end.
func connPair(t testing.TB) (a, b *net.UnixConn) {
	t.Helper()
	fa, fb, err := shm.Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	return fileConn(t, fa), fileConn(t, fb)
}

// fileConn turns fd into a *net.UnixConn (closing fd) closed at the
// test's end.
func fileConn(t testing.TB, fd int) *net.UnixConn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "sock")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn)
}

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// sameObject reports whether fds a and b name the same file.
func sameObject(t testing.TB, a, b int) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	if err := unix.Fstat(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(b, &sb); err != nil {
		t.Fatal(err)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// pattern is the byte at offset i of the test pattern for seed.
func pattern(seed byte, i int) byte { return byte(i*7) ^ seed }
