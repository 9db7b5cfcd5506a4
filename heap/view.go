package heap

// View is a Heap as one who does not own it sees it: its size, its
// memory and what is in use, without Close, Alloc or Free. A transport
// hands out its heap as a View: it owns the heap, allocates in it for its
// callers, and closes it with itself. The zero View is of no heap: Size
// and InUse are 0, Region is nil and Slice fails with ErrClosed.
type View struct{ h *Heap }

// View returns h as a View.
func (h *Heap) View() View { return View{h} }

// Size is Heap.Size.
func (v View) Size() uint64 {
	if v.h == nil {
		return 0
	}
	return v.h.Size()
}

// Region is Heap.Region: the whole mapping, valid until the owner closes
// the heap (then nil).
func (v View) Region() []byte {
	if v.h == nil {
		return nil
	}
	return v.h.Region()
}

// Slice is Heap.Slice.
func (v View) Slice(off, n uint64) ([]byte, error) {
	if v.h == nil {
		return nil, ErrClosed
	}
	return v.h.Slice(off, n)
}

// InUse is Heap.InUse.
func (v View) InUse() uint64 {
	if v.h == nil {
		return 0
	}
	return v.h.InUse()
}
