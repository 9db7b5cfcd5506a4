package heap

import (
	"errors"
	"sync"
)

// Remote is a neighbour's heap mapped into this process (see Map): the
// same bytes the neighbour's Heap.Region holds. All methods are safe for
// concurrent use. Other processes write it concurrently, so the bytes it
// hands out are shared memory: synchronise through the transport, not
// through Go's memory model.
type Remote struct {
	mu     sync.Mutex
	mem    []byte // exactly the slice mmap returned; nil once closed
	fd     int    // the neighbour's descriptor, owned; -1 once closed
	size   uint64
	closed bool
}

// Size returns the size of the mapped heap in bytes. It does not change,
// not even at Close.
func (r *Remote) Size() uint64 { return r.size }

// Slice returns the n bytes of the neighbour's heap at offset off, with
// capacity n. It aliases the mapping and is valid until Close. A range
// that overflows or ends past Size returns a *RangeError wrapping
// ErrOutOfBounds; after Close, Slice returns ErrClosed.
func (r *Remote) Slice(off, n uint64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	return sliceOf(r.mem, r.size, off, n)
}

// Close unmaps the neighbour's heap and closes its descriptor. Every slice
// from Slice becomes invalid. Close is idempotent: the first call does the
// work and returns any munmap or close error; each later call returns
// ErrClosed and does nothing.
func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	errUnmap := unmap(r.mem)
	errClose := closeFD(r.fd)
	r.mem, r.fd = nil, -1
	return errors.Join(errUnmap, errClose)
}
