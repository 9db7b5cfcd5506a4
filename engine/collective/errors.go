package collective

import (
	"errors"
	"fmt"
)

// Sentinel errors returned (wrapped) by the byte-slice functions. Test for
// them with errors.Is; *LengthError and *AlignmentError carry the details.
// The typed-slice functions (Reduce, Finish, Reduce16, Finish16) panic
// instead, with a message naming the same condition.
var (
	// ErrDTypeLength means a byte length is not a multiple of the DType's
	// element size.
	ErrDTypeLength = errors.New("boltmesh: collective: byte length not a multiple of element size")
	// ErrLengthMismatch means dst and src have different lengths.
	ErrLengthMismatch = errors.New("boltmesh: collective: dst and src lengths differ")
	// ErrAlignment means a byte slice does not start at an address aligned
	// to the element size, so it cannot be viewed as a slice of elements.
	ErrAlignment = errors.New("boltmesh: collective: buffer not aligned to element size")
	// ErrDType means a DType is not one of the defined constants, or is not
	// accepted by the function (Reduce16 takes only Float16 and BFloat16).
	ErrDType = errors.New("boltmesh: collective: invalid dtype")
	// ErrOp means an Op is not one of the defined constants.
	ErrOp = errors.New("boltmesh: collective: invalid op")
	// ErrCount means Finish was asked to divide a Mean by a count n <= 0.
	ErrCount = errors.New("boltmesh: collective: mean count must be positive")
)

// LengthError reports byte slices whose lengths are unusable. Err is
// ErrDTypeLength or ErrLengthMismatch.
type LengthError struct {
	Func   string // "ReduceBytes", "FinishBytes", "FromBytes", ...
	DType  DType
	DstLen int // length in bytes of dst (or the only buffer)
	SrcLen int // length in bytes of src; -1 when there is no src
	Err    error
}

func (e *LengthError) Error() string {
	if e.SrcLen < 0 {
		return fmt.Sprintf("%v (%s: %v, %d bytes)", e.Err, e.Func, e.DType, e.DstLen)
	}
	return fmt.Sprintf("%v (%s: %v, dst %d bytes, src %d bytes)", e.Err, e.Func, e.DType, e.DstLen, e.SrcLen)
}

func (e *LengthError) Unwrap() error { return e.Err }

// AlignmentError reports a byte slice whose first byte is not aligned to
// its DType's element size. It wraps ErrAlignment.
type AlignmentError struct {
	Func  string
	DType DType
	Arg   string  // "dst", "src", "data" or "b"
	Addr  uintptr // address of the first byte
}

func (e *AlignmentError) Error() string {
	return fmt.Sprintf("%v (%s: %s at %#x, %v needs %d-byte alignment)",
		ErrAlignment, e.Func, e.Arg, e.Addr, e.DType, e.DType.Size())
}

func (e *AlignmentError) Unwrap() error { return ErrAlignment }

func errDType(fn string, d DType) error { return fmt.Errorf("%w (%s: %v)", ErrDType, fn, d) }
func errOp(fn string, o Op) error       { return fmt.Errorf("%w (%s: %v)", ErrOp, fn, o) }
func errCount(fn string, n int) error   { return fmt.Errorf("%w (%s: n = %d)", ErrCount, fn, n) }

// ErrUnsupportedTransport is returned (wrapped) by New for a transport
// without a collective tag space: anything but an *engine.NetTransport.
var ErrUnsupportedTransport = errors.New("boltmesh: collective: transport has no collective tag space")
