package heap_test

import (
	"errors"
	"math"
	"testing"

	"github.com/boltmesh/boltmesh/heap"
)

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		want error
	}{
		{0, heap.ErrZeroSize},
		{math.MaxUint64, heap.ErrNoSpace},
		{math.MaxUint64 - 100, heap.ErrNoSpace},
	} {
		h, err := heap.New(tc.size)
		if !errors.Is(err, tc.want) || h != nil {
			t.Errorf("New(%d) = %v, %v; want %v", tc.size, h, err, tc.want)
		}
		var ae *heap.AllocError
		if !errors.As(err, &ae) || ae.Op != "new" {
			t.Errorf("New(%d) error %v is not an *AllocError with Op new", tc.size, err)
		}
	}
}

func TestNewRoundsToPage(t *testing.T) {
	h := newHeap(t, 1)
	if h.Size() < 1 || h.Size()&(h.Size()-1) != 0 || uint64(len(h.Region())) != h.Size() {
		t.Fatalf("New(1): Size %d, len(Region) %d; want one page", h.Size(), len(h.Region()))
	}
	if h.FD() < 0 {
		t.Fatalf("FD = %d", h.FD())
	}
}

func TestAllocErrors(t *testing.T) {
	h := newHeap(t, 1<<16)
	for _, tc := range []struct {
		size, align uint64
		want        error
	}{
		{0, 0, heap.ErrZeroSize},
		{0, 64, heap.ErrZeroSize},
		{1, 3, heap.ErrBadAlign},
		{1, 96, heap.ErrBadAlign},
		{1, math.MaxUint64, heap.ErrBadAlign},
		{h.Size() + 1, 1, heap.ErrNoSpace},
		{math.MaxUint64, 0, heap.ErrNoSpace},
	} {
		b, err := h.Alloc(tc.size, tc.align)
		if !errors.Is(err, tc.want) || b != (heap.Buffer{}) {
			t.Errorf("Alloc(%d, %d) = %+v, %v; want %v", tc.size, tc.align, b, err, tc.want)
			continue
		}
		var ae *heap.AllocError
		if !errors.As(err, &ae) || ae.Op != "alloc" || ae.Size != tc.size {
			t.Errorf("Alloc(%d, %d): %#v is not an *AllocError naming the call", tc.size, tc.align, err)
		}
	}
	// A full heap refuses even one byte, and a failed Alloc changes nothing.
	mustAlloc(t, h, h.Size()-10, 1)
	if _, err := h.Alloc(1, 64); !errors.Is(err, heap.ErrNoSpace) {
		t.Errorf("Alloc into a tail of 10 unaligned bytes: %v, want ErrNoSpace", err)
	}
	if _, err := h.Alloc(11, 1); !errors.Is(err, heap.ErrNoSpace) {
		t.Errorf("Alloc(11) with 10 free: %v, want ErrNoSpace", err)
	}
	if h.InUse() != h.Size()-10 {
		t.Errorf("InUse = %d after failed Allocs", h.InUse())
	}
	mustAlloc(t, h, 10, 1)
}

func TestFreeAndBytesErrors(t *testing.T) {
	h := newHeap(t, 1<<16)
	b := mustAlloc(t, h, 256, 64)
	freed := mustAlloc(t, h, 64, 64)
	mustFree(t, h, freed)
	for _, tc := range []struct {
		name string
		buf  heap.Buffer
	}{
		{"never allocated", heap.Buffer{Offset: 4096, Len: 64}},
		{"freed", freed},
		{"zero length at live offset", heap.Buffer{Offset: b.Offset, Len: 0}},
		{"zero length", heap.Buffer{}},
		{"prefix", heap.Buffer{Offset: b.Offset, Len: b.Len - 1}},
		{"longer", heap.Buffer{Offset: b.Offset, Len: b.Len + 1}},
		{"inside", heap.Buffer{Offset: b.Offset + 1, Len: b.Len - 1}},
		{"straddling", heap.Buffer{Offset: b.Offset + b.Len/2, Len: b.Len}},
		{"past the end", heap.Buffer{Offset: h.Size(), Len: 1}},
		{"overflowing", heap.Buffer{Offset: math.MaxUint64, Len: 2}},
		{"huge", heap.Buffer{Offset: 0, Len: math.MaxUint64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.Free(tc.buf)
			checkNotAllocated(t, "Free", "free", tc.buf, err)
			p, err := h.Bytes(tc.buf)
			checkNotAllocated(t, "Bytes", "bytes", tc.buf, err)
			if p != nil {
				t.Errorf("Bytes(%+v) returned %d bytes with an error", tc.buf, len(p))
			}
		})
	}
	// The failed calls left b live and intact.
	if _, err := h.Bytes(b); err != nil {
		t.Fatalf("Bytes(%+v) after bad calls: %v", b, err)
	}
	mustFree(t, h, b)
	if err := h.Free(b); !errors.Is(err, heap.ErrNotAllocated) {
		t.Fatalf("double Free: %v, want ErrNotAllocated", err)
	}
	if h.InUse() != 0 || len(h.FreeSpans()) != 1 {
		t.Fatalf("InUse %d, free list %v; want an empty heap", h.InUse(), h.FreeSpans())
	}
}

// checkNotAllocated fails the test unless err is an *AllocError for op and
// buf wrapping ErrNotAllocated.
func checkNotAllocated(t *testing.T, call, op string, buf heap.Buffer, err error) {
	t.Helper()
	if !errors.Is(err, heap.ErrNotAllocated) {
		t.Errorf("%s(%+v) = %v, want ErrNotAllocated", call, buf, err)
		return
	}
	var ae *heap.AllocError
	if !errors.As(err, &ae) || ae.Op != op || ae.Offset != buf.Offset || ae.Size != buf.Len {
		t.Errorf("%s(%+v): %#v does not name the call", call, buf, err)
	}
}

func TestSliceErrors(t *testing.T) {
	h := newHeap(t, 1<<16)
	size := h.Size()
	for _, tc := range []struct{ off, n uint64 }{
		{size, 1},
		{size + 1, 0},
		{0, size + 1},
		{1, size},
		{1, math.MaxUint64},
		{math.MaxUint64, 2},
		{math.MaxUint64, 0},
	} {
		p, err := h.Slice(tc.off, tc.n)
		var oob *heap.RangeError
		if !errors.Is(err, heap.ErrOutOfBounds) || !errors.As(err, &oob) || p != nil {
			t.Errorf("Slice(%d, %d) = %d bytes, %v; want *RangeError", tc.off, tc.n, len(p), err)
			continue
		}
		if *oob != (heap.RangeError{Offset: tc.off, Len: tc.n, Size: size}) {
			t.Errorf("Slice(%d, %d): %+v", tc.off, tc.n, *oob)
		}
	}
	for _, tc := range []struct{ off, n uint64 }{{0, size}, {size, 0}, {size - 1, 1}, {0, 0}} {
		p, err := h.Slice(tc.off, tc.n)
		if err != nil || uint64(len(p)) != tc.n || uint64(cap(p)) != tc.n {
			t.Errorf("Slice(%d, %d) = len %d cap %d, %v", tc.off, tc.n, len(p), cap(p), err)
		}
	}
}

func TestErrorsAfterClose(t *testing.T) {
	h, err := heap.New(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	b := mustAlloc(t, h, 64, 0)
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Documented: a second Close does nothing and returns ErrClosed.
	if err := h.Close(); !errors.Is(err, heap.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := h.Slice(0, 1); !errors.Is(err, heap.ErrClosed) {
		t.Errorf("Slice after Close = %v, want ErrClosed", err)
	}
	if _, err := h.Alloc(64, 0); !errors.Is(err, heap.ErrClosed) {
		t.Errorf("Alloc after Close = %v, want ErrClosed", err)
	}
	if err := h.Free(b); !errors.Is(err, heap.ErrClosed) {
		t.Errorf("Free after Close = %v, want ErrClosed", err)
	}
	if p, err := h.Bytes(b); !errors.Is(err, heap.ErrClosed) || p != nil {
		t.Errorf("Bytes after Close = %d bytes, %v; want ErrClosed", len(p), err)
	}
	if h.Region() != nil || h.FD() != -1 || h.InUse() != 0 {
		t.Errorf("after Close: Region %d bytes, FD %d, InUse %d", len(h.Region()), h.FD(), h.InUse())
	}
}

// TestAllocErrorMessage: an AllocError says "heap:" once, however its
// sentinel is worded.
func TestAllocErrorMessage(t *testing.T) {
	h, err := heap.New(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = h.Free(heap.Buffer{Offset: 0, Len: 100})
	if got, want := err.Error(), "heap: free offset=0 len=100: buffer not allocated"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !errors.Is(err, heap.ErrNotAllocated) {
		t.Errorf("%v is not ErrNotAllocated", err)
	}
}
