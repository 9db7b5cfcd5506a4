package heap

import (
	"errors"
	"math"
	"sync"
)

// Heap is one rank's symmetric heap: a page-aligned mmap'd region of
// shared memory and the allocator that hands out Buffers from it. All
// methods are safe for concurrent use.
type Heap struct {
	mu     sync.Mutex
	mem    []byte // exactly the slice mmap returned; nil once closed
	fd     int    // shared-memory descriptor behind mem; -1 once closed
	size   uint64
	closed bool
	alloc  allocator
}

// New maps a symmetric heap of size bytes, rounded up to the page size.
// A size of 0 is an error wrapping ErrZeroSize; a size that cannot be
// mapped in this address space wraps ErrNoSpace; system call failures are
// *os.SyscallError values (errors.Is(err, unix.ENOMEM), say).
func New(size uint64) (*Heap, error) {
	if size == 0 {
		return nil, &AllocError{Op: "new", Err: ErrZeroSize}
	}
	page := pageSize()
	if size > uint64(math.MaxInt)-page {
		return nil, &AllocError{Op: "new", Size: size, Err: ErrNoSpace}
	}
	size = (size + page - 1) &^ (page - 1)
	fd, err := openShared(size)
	if err != nil {
		return nil, &AllocError{Op: "new", Size: size, Err: err}
	}
	mem, err := mapShared(fd, size)
	if err != nil {
		closeFD(fd)
		return nil, &AllocError{Op: "new", Size: size, Err: err}
	}
	return &Heap{mem: mem, fd: fd, size: size, alloc: newAllocator(size)}, nil
}

// Size returns the size of the heap in bytes, a multiple of the page
// size. It does not change, not even at Close.
func (h *Heap) Size() uint64 { return h.size }

// FD returns the shared-memory file descriptor that backs the heap, for
// passing to a peer on the same host. The Heap owns it: the caller must not
// close it, and it is closed (and FD returns -1) once the Heap is closed.
func (h *Heap) FD() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fd
}

// Region returns the whole mapping, Size bytes. It aliases the heap: writes
// through it are writes to the heap. It is valid until Close, which unmaps
// it; touching it after Close faults. After Close, Region returns nil.
func (h *Heap) Region() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mem
}

// Slice returns the n bytes of the heap at offset off, with capacity n.
// Like Region, it aliases the heap and is valid until Close. A range that
// overflows or ends past Size returns a *RangeError wrapping
// ErrOutOfBounds; after Close, Slice returns ErrClosed.
func (h *Heap) Slice(off, n uint64) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	return sliceOf(h.mem, h.size, off, n)
}

// sliceOf returns the n bytes of mem, a mapping of size bytes, at offset
// off, with capacity n; a range that overflows or ends past size is a
// *RangeError.
func sliceOf(mem []byte, size, off, n uint64) ([]byte, error) {
	if off > size || n > size-off {
		return nil, &RangeError{Offset: off, Len: n, Size: size}
	}
	return mem[off : off+n : off+n], nil
}

// InUse returns the number of bytes in live allocations (alignment padding
// not included). It is 0 once the heap is closed.
func (h *Heap) InUse() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.alloc.inUse
}

// Close unmaps the heap, with the exact slice mmap returned, and closes its
// descriptor. Every slice from Region, Slice and Bytes becomes invalid, and
// every later call on the Heap fails with ErrClosed. Close is idempotent:
// the first call does the work and returns any munmap or close error; each
// later call returns ErrClosed and does nothing.
func (h *Heap) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	h.closed = true
	errUnmap := unmap(h.mem)
	errClose := closeFD(h.fd)
	h.mem, h.fd = nil, -1
	h.alloc = allocator{}
	return errors.Join(errUnmap, errClose)
}
