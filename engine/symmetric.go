package engine

import "github.com/boltmesh/boltmesh/heap"

// SymmetricBuffer names Len bytes at Offset in rank Rank's symmetric heap.
// Buffers from Alloc carry this rank; On names the same range on another
// rank, which holds it too when every rank made the same allocations.
type SymmetricBuffer struct {
	Rank   int
	Offset uint64
	Len    uint64
}

// On returns the same range in rank's heap.
func (b SymmetricBuffer) On(rank int) SymmetricBuffer {
	b.Rank = rank
	return b
}

// SymmetricTransport is one-sided communication over symmetric heaps, as
// in OpenSHMEM: a rank writes (Put) into and reads (Get) from another
// rank's heap without that rank taking part.
type SymmetricTransport interface {
	// Rank is this process's rank in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	// Put writes src into dst (dst.Len == len(src)). It returns when src may
	// be reused; the data is visible at the target after Quiet or Barrier.
	// A put the target refuses fails the next Quiet or Barrier.
	Put(dst SymmetricBuffer, src []byte) error
	// Get reads src into dst (src.Len == len(dst)) and returns when dst
	// holds the data.
	Get(src SymmetricBuffer, dst []byte) error
	// PutNB starts a Put; src must stay untouched until the Request's Wait.
	PutNB(dst SymmetricBuffer, src []byte) (Request, error)
	// GetNB starts a Get; dst holds the data once the Request's Wait
	// returns nil.
	GetNB(src SymmetricBuffer, dst []byte) (Request, error)
	// Quiet returns when every put this rank issued is complete and visible
	// at its target, with the errors of any the targets refused.
	Quiet() error
	// Barrier is Quiet on every rank followed by a barrier: after it
	// returns anywhere, every put issued before it by any rank is visible.
	Barrier() error
	// Close releases the transport and unmaps the heap.
	Close() error
}

var _ SymmetricTransport = (*NetTransport)(nil)

// Heap returns a view of this rank's symmetric heap: its size, memory and
// what is in use. The transport owns the heap: it allocates in it (Alloc,
// Free) and closes it with itself, and the view cannot.
func (t *NetTransport) Heap() heap.View { return t.heap.View() }

// Alloc allocates size bytes aligned to align (0: heap.DefaultAlign) in
// this rank's heap. Ranks that make the same sequence of Alloc and Free
// calls get the same offsets; collective.Comm.Alloc checks that they did.
func (t *NetTransport) Alloc(size, align uint64) (SymmetricBuffer, error) {
	b, err := t.heap.Alloc(size, align)
	if err != nil {
		return SymmetricBuffer{}, err
	}
	return SymmetricBuffer{Rank: t.rank, Offset: b.Offset, Len: b.Len}, nil
}

// Free releases a buffer from Alloc.
func (t *NetTransport) Free(b SymmetricBuffer) error {
	return t.heap.Free(heap.Buffer{Offset: b.Offset, Len: b.Len})
}

// Bytes returns this rank's view of b's range: valid until b is freed or
// the transport closed.
func (t *NetTransport) Bytes(b SymmetricBuffer) ([]byte, error) {
	return t.heap.Bytes(heap.Buffer{Offset: b.Offset, Len: b.Len})
}
