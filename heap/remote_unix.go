//go:build linux || darwin || freebsd || netbsd || openbsd

package heap

import (
	"math"

	"github.com/boltmesh/boltmesh/internal/shm"
)

// Map maps a neighbour's heap, received as fd (its Heap.FD, passed over a
// Unix socket), whose size is size bytes (its Heap.Size). It first checks
// that the object is exactly size bytes and, where the system has seals,
// that it cannot be shrunk or grown; then maps it read-write, shared. Map
// takes ownership of fd: the Remote closes it at Close, and Map closes it
// at once if it fails. Errors are *AllocError values (Op "map") wrapping
// ErrZeroSize, ErrNoSpace (errors.Is finds them), a system call error, or
// the refusal of an object of the wrong size or without the seals (see
// AllocError).
func Map(fd int, size uint64) (*Remote, error) {
	var err error
	switch {
	case size == 0:
		err = ErrZeroSize
	case size > math.MaxInt:
		err = ErrNoSpace
	default:
		err = shm.Check(fd, int(size))
	}
	var mem []byte
	if err == nil {
		mem, err = shm.Map(fd, int(size))
	}
	if err != nil {
		closeFD(fd)
		return nil, &AllocError{Op: "map", Size: size, Err: err}
	}
	return &Remote{mem: mem, fd: fd, size: size}, nil
}
