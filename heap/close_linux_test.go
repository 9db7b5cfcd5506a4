//go:build linux

package heap_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/heap"
	"golang.org/x/sys/unix"
)

// mapped reports whether any mapping in /proc/self/maps overlaps
// [start, start+n).
func mapped(t *testing.T, start, n uint64) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rng, _, _ := strings.Cut(sc.Text(), " ")
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			t.Fatalf("bad maps line %q", sc.Text())
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("bad maps line %q: %v", sc.Text(), err)
		}
		if a < start+n && start < b {
			return true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

func TestCloseUnmaps(t *testing.T) {
	h, err := heap.New(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	r := h.Region()
	start, n := uint64(uintptr(unsafe.Pointer(&r[0]))), h.Size()
	fd := h.FD()
	if !mapped(t, start, n) {
		t.Fatalf("heap at %#x+%d not in /proc/self/maps before Close", start, n)
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil || !strings.Contains(link, "memfd:") {
		t.Fatalf("FD %d -> %q, %v; want a memfd", fd, link, err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if mapped(t, start, n) {
		t.Fatalf("heap at %#x+%d still in /proc/self/maps after Close", start, n)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("fcntl(F_GETFD) on the heap's fd after Close: %v, want EBADF", err)
	}
	if err := h.Close(); !errors.Is(err, heap.ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, err := h.Slice(0, 1); !errors.Is(err, heap.ErrClosed) {
		t.Fatalf("Slice after Close = %v, want ErrClosed", err)
	}
}

func TestFDIsCloseOnExec(t *testing.T) {
	h := newHeap(t, 1)
	flags, err := unix.FcntlInt(uintptr(h.FD()), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("F_GETFD = %#x, %v; want FD_CLOEXEC", flags, err)
	}
}
