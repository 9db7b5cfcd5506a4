package heap

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of package heap, usually wrapped in an *AllocError or a
// *RangeError. Test for them with errors.Is.
var (
	// ErrOutOfBounds means a requested range does not lie inside the heap,
	// or its end overflows uint64.
	ErrOutOfBounds = errors.New("heap: range out of bounds")
	// ErrClosed means the Heap has been closed. It is the one ErrClosed of
	// packages heap, engine and rpc (engine.ErrClosed, rpc.ErrClosed): a
	// closed heap, transport or RPC agent all match it.
	ErrClosed = errors.New("boltmesh: closed")
	// ErrNoSpace means no free range of the heap can hold the allocation,
	// or (from New) the requested heap does not fit the address space.
	ErrNoSpace = errors.New("heap: no space")
	// ErrBadAlign means an alignment is not a power of two.
	ErrBadAlign = errors.New("heap: alignment not a power of two")
	// ErrNotAllocated means a Buffer given to Free or Bytes is not exactly
	// a live allocation: never allocated, already freed, out of range, or
	// overlapping an allocation without matching it.
	ErrNotAllocated = errors.New("heap: buffer not allocated")
	// ErrZeroSize means a size of zero was given to New or Alloc.
	ErrZeroSize = errors.New("heap: zero size")
)

// RangeError reports a range [Offset, Offset+Len) of a Heap or a Remote
// that does not fit its Size bytes (Slice's arguments). It wraps
// ErrOutOfBounds. (engine.OutOfBoundsError is the engine's check of a
// one-sided transfer against a rank's heap, before it is sent.)
type RangeError struct {
	Offset uint64 // start of the requested range
	Len    uint64 // length of the requested range
	Size   uint64 // size of the heap
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%v: [%d, +%d) in a heap of %d bytes", ErrOutOfBounds, e.Offset, e.Len, e.Size)
}

// Unwrap returns ErrOutOfBounds.
func (e *RangeError) Unwrap() error { return ErrOutOfBounds }

// AllocError reports a failed New, Alloc, Free, Bytes or Map call and the
// arguments it was given. Err is one of the package's sentinels, or a
// system call error from New or Map, or (Map) the refusal of the
// neighbour's object: not sealed against resizing, or not of the size
// given, with a message naming what was found and what was wanted. Such
// a refusal matches none of the package's sentinels.
type AllocError struct {
	Op     string // "new", "alloc", "free", "bytes" or "map"
	Offset uint64 // Buffer.Offset for "free" and "bytes"; 0 otherwise
	Size   uint64 // requested size, or Buffer.Len for "free" and "bytes"
	Align  uint64 // requested alignment for "alloc"; 0 otherwise
	Err    error  // the cause
}

func (e *AllocError) Error() string {
	switch e.Op {
	case "alloc":
		return fmt.Sprintf("heap: alloc size=%d align=%d: %s", e.Size, e.Align, unprefixed(e.Err))
	case "free", "bytes":
		return fmt.Sprintf("heap: %s offset=%d len=%d: %s", e.Op, e.Offset, e.Size, unprefixed(e.Err))
	}
	return fmt.Sprintf("heap: %s size=%d: %s", e.Op, e.Size, unprefixed(e.Err))
}

// Unwrap returns the cause.
func (e *AllocError) Unwrap() error { return e.Err }

// unprefixed is err's message without the "heap: " its wrapper already
// says.
func unprefixed(err error) string { return strings.TrimPrefix(err.Error(), "heap: ") }
