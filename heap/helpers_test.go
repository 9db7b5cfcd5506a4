package heap_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/heap"
)

// newHeap returns a heap of size bytes that is closed when the test ends.
func newHeap(t testing.TB, size uint64) *heap.Heap {
	t.Helper()
	h, err := heap.New(size)
	if err != nil {
		t.Fatalf("New(%d): %v", size, err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil && !errors.Is(err, heap.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// mustAlloc allocates or fails the test.
func mustAlloc(t testing.TB, h *heap.Heap, size, align uint64) heap.Buffer {
	t.Helper()
	b, err := h.Alloc(size, align)
	if err != nil {
		t.Fatalf("Alloc(%d, %d): %v", size, align, err)
	}
	return b
}

// mustFree frees or fails the test.
func mustFree(t testing.TB, h *heap.Heap, b heap.Buffer) {
	t.Helper()
	if err := h.Free(b); err != nil {
		t.Fatalf("Free(%+v): %v", b, err)
	}
}

// checkFreeList fails the test unless h's free list is sorted, holds no
// empty or adjacent spans, lies inside the heap, overlaps no live buffer,
// and tiles the heap together with the live buffers (alignment padding
// stays free), and unless InUse is the sum of the live lengths.
func checkFreeList(t testing.TB, h *heap.Heap, live []heap.Buffer) {
	t.Helper()
	free := h.FreeSpans()
	var freeBytes, liveBytes uint64
	for i, s := range free {
		if s.Len == 0 {
			t.Fatalf("free list %v: empty span at %d", free, i)
		}
		if s.Offset+s.Len > h.Size() {
			t.Fatalf("free list %v: span %d past the heap end %d", free, i, h.Size())
		}
		if i > 0 && free[i-1].Offset+free[i-1].Len >= s.Offset {
			t.Fatalf("free list %v: spans %d and %d overlap, touch or are unsorted", free, i-1, i)
		}
		freeBytes += s.Len
	}
	for _, b := range live {
		liveBytes += b.Len
		for _, s := range free {
			if overlaps(b, s) {
				t.Fatalf("live %+v overlaps free span %+v", b, s)
			}
		}
	}
	if h.InUse() != liveBytes {
		t.Fatalf("InUse = %d, live buffers hold %d", h.InUse(), liveBytes)
	}
	if freeBytes+liveBytes != h.Size() {
		t.Fatalf("free %d + live %d != size %d", freeBytes, liveBytes, h.Size())
	}
}

// overlaps reports whether a and b share a byte.
func overlaps(a, b heap.Buffer) bool {
	return a.Offset < b.Offset+b.Len && b.Offset < a.Offset+a.Len
}
