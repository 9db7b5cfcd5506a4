//go:build linux

package heap_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/heap"
	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// dupFD returns a close-on-exec duplicate of h's descriptor, as a
// neighbour would receive it.
func dupFD(t *testing.T, h *heap.Heap) int {
	t.Helper()
	fd, err := unix.FcntlInt(uintptr(h.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestHeapFDSealed(t *testing.T) {
	h := newHeap(t, 1<<16)
	if err := shm.Check(h.FD(), int(h.Size())); err != nil {
		t.Fatalf("shm.Check(heap FD): %v; want the heap's memfd sealed", err)
	}
	if err := unix.Ftruncate(h.FD(), 4096); !errors.Is(err, unix.EPERM) {
		t.Fatalf("ftruncate of the heap's memfd = %v, want EPERM", err)
	}
}

func TestMapRemoteSharesBytes(t *testing.T) {
	h := newHeap(t, 1<<16)
	r, err := heap.Map(dupFD(t, h), h.Size())
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != h.Size() {
		t.Fatalf("Remote.Size = %d, want %d", r.Size(), h.Size())
	}
	local, _ := h.Slice(100, 4)
	copy(local, "abcd")
	remote, err := r.Slice(100, 4)
	if err != nil || string(remote) != "abcd" {
		t.Fatalf("Remote.Slice = %q, %v; want the heap's bytes", remote, err)
	}
	copy(remote, "wxyz")
	if string(local) != "wxyz" {
		t.Fatalf("heap sees %q after a write through the Remote, want wxyz", local)
	}
	for _, rg := range [][2]uint64{{h.Size(), 1}, {h.Size() - 1, 2}, {1, ^uint64(0)}} {
		_, err := r.Slice(rg[0], rg[1])
		var re *heap.RangeError
		if !errors.As(err, &re) || !errors.Is(err, heap.ErrOutOfBounds) || re.Size != h.Size() {
			t.Fatalf("Remote.Slice(%d, %d) = %v, want a *RangeError", rg[0], rg[1], err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); !errors.Is(err, heap.ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, err := r.Slice(0, 1); !errors.Is(err, heap.ErrClosed) {
		t.Fatalf("Slice after Close = %v, want ErrClosed", err)
	}
	// The heap itself is untouched by the Remote's Close.
	if b, err := h.Slice(100, 4); err != nil || string(b) != "wxyz" {
		t.Fatalf("heap after Remote.Close: %q, %v", b, err)
	}
}

func TestMapRemoteRefusesAndClosesFD(t *testing.T) {
	h := newHeap(t, 1<<16)
	unsealed, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(unsealed, 1<<16)
	for _, tc := range []struct {
		name string
		fd   int
		size uint64
		want error
	}{
		{"wrong size", dupFD(t, h), h.Size() / 2, shm.ErrSize},
		{"zero size", dupFD(t, h), 0, heap.ErrZeroSize},
		{"unsealed", unsealed, 1 << 16, shm.ErrNotSealed},
	} {
		r, err := heap.Map(tc.fd, tc.size)
		var ae *heap.AllocError
		if r != nil || !errors.Is(err, tc.want) || !errors.As(err, &ae) || ae.Op != "map" {
			t.Fatalf("%s: Map = %v, %v; want an *AllocError wrapping %v", tc.name, r, err, tc.want)
		}
		if _, err := unix.FcntlInt(uintptr(tc.fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
			t.Fatalf("%s: fd after a failed Map: %v, want EBADF (Map owns it)", tc.name, err)
		}
	}
}
