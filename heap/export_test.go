package heap

// FreeSpans returns a copy of h's free list as (offset, length) Buffers,
// sorted by offset, so tests can check the allocator's invariants.
func (h *Heap) FreeSpans() []Buffer {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Buffer, len(h.alloc.free))
	for i, s := range h.alloc.free {
		out[i] = Buffer{Offset: s.off, Len: s.len}
	}
	return out
}
