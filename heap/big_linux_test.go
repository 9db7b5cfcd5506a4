//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64)

package heap_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/heap"
	"golang.org/x/sys/unix"
)

func TestHeapOver4GiB(t *testing.T) {
	const size = 5 << 30
	h, err := heap.New(size)
	if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EFBIG) {
		t.Skipf("New(5 GiB): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if h.Size() != size || uint64(len(h.Region())) != size {
		t.Fatalf("Size %d, len(Region) %d; want %d", h.Size(), len(h.Region()), uint64(size))
	}
	low := mustAlloc(t, h, 4<<30+12345, 0) // pushes the next buffer past 4 GiB
	hi := mustAlloc(t, h, 1<<20, 4096)
	if hi.Offset < 4<<30 || hi.Offset+hi.Len <= 1<<32 {
		t.Fatalf("second buffer %+v does not lie past 4 GiB", hi)
	}
	p, err := h.Bytes(hi)
	if err != nil {
		t.Fatal(err)
	}
	p[len(p)-1] = 0x5A
	q, err := h.Slice(hi.Offset+hi.Len-1, 1)
	if err != nil || q[0] != 0x5A || h.Region()[hi.Offset+hi.Len-1] != 0x5A {
		t.Fatalf("last byte past 4 GiB not seen through Slice/Region: %v", err)
	}
	last, err := h.Slice(size-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	last[0] = 0xA5
	if h.Region()[size-1] != 0xA5 {
		t.Fatal("last byte of the heap not written")
	}
	if _, err := h.Slice(size, 1); !errors.Is(err, heap.ErrOutOfBounds) {
		t.Fatalf("Slice past 5 GiB: %v", err)
	}
	mustFree(t, h, low)
	mustFree(t, h, hi)
	if b := mustAlloc(t, h, size, 0); b != (heap.Buffer{Offset: 0, Len: size}) {
		t.Fatalf("Alloc(5 GiB) after freeing all = %+v", b)
	}
}
