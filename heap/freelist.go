package heap

import "slices"

// span is a range [off, off+len) of the heap.
type span struct{ off, len uint64 }

// end returns the first offset past s. It never overflows: spans lie
// inside a heap whose size fits in an int.
func (s span) end() uint64 { return s.off + s.len }

// allocator is the symmetric allocator: first-fit over free spans sorted
// by offset. It is deterministic and does no locking; Heap holds the lock.
//
// Invariants: free is sorted by off, holds no empty span and no two
// adjacent spans (Free coalesces them); live maps the offset of each live
// allocation to its length; free and live together tile [0, size) exactly.
type allocator struct {
	free  []span
	live  map[uint64]uint64
	inUse uint64
}

// newAllocator returns an allocator over an empty heap of size bytes.
func newAllocator(size uint64) allocator {
	return allocator{free: []span{{0, size}}, live: make(map[uint64]uint64)}
}

// alloc returns the offset of the first free range, lowest offset first,
// that holds size bytes at an offset aligned to align (a power of two).
func (a *allocator) alloc(size, align uint64) (uint64, bool) {
	for i, s := range a.free {
		pad := (align - s.off&(align-1)) & (align - 1)
		if pad > s.len || s.len-pad < size {
			continue
		}
		off := s.off + pad
		a.take(i, span{off, size})
		a.live[off] = size
		a.inUse += size
		return off, true
	}
	return 0, false
}

// take removes r, which lies inside a.free[i], from the free list, leaving
// the parts of a.free[i] before and after r free.
func (a *allocator) take(i int, r span) {
	s := a.free[i]
	head := span{s.off, r.off - s.off}
	tail := span{r.end(), s.end() - r.end()}
	switch {
	case head.len > 0 && tail.len > 0:
		a.free[i] = head
		a.free = slices.Insert(a.free, i+1, tail)
	case head.len > 0:
		a.free[i] = head
	case tail.len > 0:
		a.free[i] = tail
	default:
		a.free = slices.Delete(a.free, i, i+1)
	}
}

// release frees the live allocation r and coalesces it with its free
// neighbours. It reports false, changing nothing, if r is not exactly a
// live allocation.
func (a *allocator) release(r span) bool {
	if n, ok := a.live[r.off]; !ok || n != r.len {
		return false
	}
	delete(a.live, r.off)
	a.inUse -= r.len
	i, _ := slices.BinarySearchFunc(a.free, r.off, func(s span, off uint64) int {
		return cmpUint64(s.off, off)
	})
	mergePrev := i > 0 && a.free[i-1].end() == r.off
	mergeNext := i < len(a.free) && a.free[i].off == r.end()
	switch {
	case mergePrev && mergeNext:
		a.free[i-1].len += r.len + a.free[i].len
		a.free = slices.Delete(a.free, i, i+1)
	case mergePrev:
		a.free[i-1].len += r.len
	case mergeNext:
		a.free[i] = span{r.off, r.len + a.free[i].len}
	default:
		a.free = slices.Insert(a.free, i, r)
	}
	return true
}

// isLive reports whether r is exactly a live allocation.
func (a *allocator) isLive(r span) bool {
	n, ok := a.live[r.off]
	return ok && n == r.len
}

// cmpUint64 compares a and b like cmp.Compare.
func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
