package heap

// DefaultAlign is the alignment Alloc uses when given an alignment of 0:
// a cache line on the platforms boltmesh targets.
const DefaultAlign = 64

// Buffer names a range of the heap: Len bytes at Offset. It is plain data,
// meaningful on every rank: when every rank makes the same sequence of
// Alloc and Free calls on heaps of the same size, each call returns the
// same Buffer everywhere, so a Buffer can be sent to a peer to name the
// peer's copy of it.
type Buffer struct{ Offset, Len uint64 }

// Alloc allocates size bytes at an offset aligned to align, which must be a
// power of two; 0 means DefaultAlign. It takes the free range with the
// lowest offset that fits (first fit), so the result depends only on the
// sequence of earlier Alloc and Free calls.
//
// Alloc(0, align) is an error wrapping ErrZeroSize: there are no
// zero-length buffers. Other failures are *AllocError values wrapping
// ErrBadAlign, ErrNoSpace or ErrClosed.
func (h *Heap) Alloc(size, align uint64) (Buffer, error) {
	if align == 0 {
		align = DefaultAlign
	}
	fail := func(err error) (Buffer, error) {
		return Buffer{}, &AllocError{Op: "alloc", Size: size, Align: align, Err: err}
	}
	switch {
	case align&(align-1) != 0:
		return fail(ErrBadAlign)
	case size == 0:
		return fail(ErrZeroSize)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fail(ErrClosed)
	}
	if size > h.size {
		return fail(ErrNoSpace)
	}
	off, ok := h.alloc.alloc(size, align)
	if !ok {
		return fail(ErrNoSpace)
	}
	return Buffer{Offset: off, Len: size}, nil
}

// Free returns b, which must be exactly a Buffer returned by Alloc and not
// freed since, to the heap, merging it with free neighbours. Any other
// Buffer (freed twice, never allocated, out of range, or overlapping an
// allocation without matching it) is an *AllocError wrapping
// ErrNotAllocated, and the heap is left unchanged. Slices from Bytes(b)
// become invalid: the range may be handed out again.
func (h *Heap) Free(b Buffer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return &AllocError{Op: "free", Offset: b.Offset, Size: b.Len, Err: ErrClosed}
	}
	if !h.alloc.release(span{b.Offset, b.Len}) {
		return &AllocError{Op: "free", Offset: b.Offset, Size: b.Len, Err: ErrNotAllocated}
	}
	return nil
}

// Bytes returns the local view of b: its b.Len bytes of this rank's heap,
// with capacity b.Len. The slice aliases the heap and is valid until the
// earlier of Free(b) and Close: after Free the range may belong to another
// allocation, and after Close it is unmapped and touching it faults.
// b must be exactly a live allocation, as for Free, or Bytes returns an
// *AllocError wrapping ErrNotAllocated (or ErrClosed).
func (h *Heap) Bytes(b Buffer) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, &AllocError{Op: "bytes", Offset: b.Offset, Size: b.Len, Err: ErrClosed}
	}
	if !h.alloc.isLive(span{b.Offset, b.Len}) {
		return nil, &AllocError{Op: "bytes", Offset: b.Offset, Size: b.Len, Err: ErrNotAllocated}
	}
	return h.mem[b.Offset : b.Offset+b.Len : b.Offset+b.Len], nil
}
