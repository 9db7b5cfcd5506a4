package collective

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The errors of package collective: its sentinels, grouped by where they
// come from, then the typed errors that wrap them. Test for them with
// errors.Is and errors.As.

// Sentinel errors of calls whose ranks disagree.
var (
	// ErrMismatch means the ranks called their collectives differently:
	// another collective, element type or reduction (*MismatchError), or
	// another length (then the error also wraps ErrLengthMismatch). The
	// transport reports it too, as it finds a message of another call;
	// nothing was combined.
	ErrMismatch = plumb.ErrCollMismatch
	// ErrAbandoned means another rank gave up the call in progress: it
	// found that the ranks' calls differ, refused its arguments, ran out
	// of time (its ctx), or was told so by a third; this rank's part of it
	// could never complete. The transport's errors wrapping it name the
	// rank (see AbandonedError).
	ErrAbandoned = plumb.ErrCollAbandoned
	// ErrMayHaveCompleted means a collective call failed on this rank after
	// this rank had sent part of its data (or in a collective where other
	// ranks may complete without this rank's data): other ranks may have
	// completed the call, with results that include this rank's part, while
	// this rank reports an error. Errors wrapping it are *PartialError.
	ErrMayHaveCompleted = errors.New("boltmesh: collective: the call may have completed on other ranks")
)

// Sentinel errors of the collectives' argument checks (the byte-slice
// functions' are below).
// Arguments are checked before any message is sent; a call that fails
// them still takes its number and is abandoned (see refuse), so the other
// ranks, which did call the collective, fail with ErrAbandoned.
var (
	// ErrRoot means a root rank is outside [0, world size).
	ErrRoot = errors.New("boltmesh: collective: root rank out of range")
	// ErrCounts means a counts slice does not have one entry per rank, has
	// a negative entry, or sums beyond what a buffer can hold.
	ErrCounts = errors.New("boltmesh: collective: invalid counts")
	// ErrBufferSize means a buffer's length is not what the counts and the
	// element size make it (count × dt.Size() bytes).
	ErrBufferSize = errors.New("boltmesh: collective: buffer length does not match counts")
)

// Sentinel errors of the byte-slice functions, returned wrapped. Test for
// them with errors.Is; *LengthError and *AlignmentError carry the details.
// The typed-slice functions (Combine, Finish, Combine16, Finish16) panic
// instead, with a message naming the same condition.
var (
	// ErrDTypeLength means a byte length is not a multiple of the DType's
	// element size.
	ErrDTypeLength = errors.New("boltmesh: collective: byte length not a multiple of element size")
	// ErrLengthMismatch means two lengths that must agree differ: dst and
	// src of a byte-slice function (*LengthError), or the buffers the
	// ranks passed to one collective call (then the error also wraps
	// ErrMismatch).
	ErrLengthMismatch = errors.New("boltmesh: collective: dst and src lengths differ")
	// ErrAlignment means a byte slice does not start at an address aligned
	// to the element size, so it cannot be viewed as a slice of elements.
	ErrAlignment = errors.New("boltmesh: collective: buffer not aligned to element size")
	// ErrDType means a DType is not one of the defined constants, or is not
	// accepted by the function (Combine16 takes only Float16 and BFloat16).
	ErrDType = errors.New("boltmesh: collective: invalid dtype")
	// ErrOp means an Op is not one of the defined constants.
	ErrOp = errors.New("boltmesh: collective: invalid op")
	// ErrCount means Finish was asked to divide a Mean by a count n <= 0.
	ErrCount = errors.New("boltmesh: collective: mean count must be positive")
)

// Sentinel errors of the one-sided allreduce and of Alloc.
var (
	// ErrAllocMismatch means ranks disagree about an allocation made
	// together (Comm.Alloc, the one-sided allreduce's area): they did not
	// make the same sequence of Alloc and Free calls, or one's failed.
	ErrAllocMismatch = errors.New("boltmesh: collective: ranks disagree on a symmetric allocation")
	// ErrAlgorithm means Options.Algorithm is not one of the constants.
	ErrAlgorithm = errors.New("boltmesh: collective: invalid algorithm")
	// ErrNoSymmetricHeap means the one-sided algorithm was selected, or
	// Alloc called, over a transport that does not implement
	// SymmetricTransport.
	ErrNoSymmetricHeap = errors.New("boltmesh: collective: transport has no symmetric heap")
	// ErrHeapSpace means the one-sided allreduce could not allocate its
	// area in the symmetric heap of some rank (*HeapError).
	ErrHeapSpace = errors.New("boltmesh: collective: symmetric heap too small for the one-sided allreduce")
	// ErrOneSidedFailed means an earlier one-sided allreduce of this Comm
	// failed in a way that may have left the ranks at different steps, or
	// gets of its heap area in flight: the Comm no longer uses the
	// symmetric heap, and every later one-sided call returns this error,
	// wrapping the first failure (errors.Is(err, engine.ErrPeerLost)
	// still holds after a lost peer).
	ErrOneSidedFailed = errors.New("boltmesh: collective: an earlier one-sided allreduce failed; this Comm no longer uses the symmetric heap")
)

// Sentinel errors of the deadline allreduce.
var (
	// ErrWorldTooLarge means a deadline allreduce was asked of more than 64
	// ranks (Contributors is a 64-bit set).
	ErrWorldTooLarge = errors.New("boltmesh: collective: deadline allreduce supports at most 64 ranks")
	// ErrBehind is the error of a deadline allreduce on a rank that was still
	// in an earlier round when the root finished this one (it had not yet
	// taken the earlier round's result): the round went on without it, and
	// it gets no result, so that it catches up with the root instead of
	// falling further behind. Its next calls are on time again.
	ErrBehind = errors.New("boltmesh: collective: this rank was a round behind the root: the deadline allreduce went on without it")
)

// LengthError reports byte slices whose lengths are unusable. Err is
// ErrDTypeLength or ErrLengthMismatch.
type LengthError struct {
	Func   string // "CombineBytes", "FinishBytes", "FromBytes", ...
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

// MismatchError reports a message from a rank whose call differs from this
// rank's. It wraps the transport's error (and so ErrMismatch).
type MismatchError struct {
	Rank int    // the rank whose message did not match
	Want string // this rank's call, e.g. "allreduce of float32 with sum"
	Got  string // the other rank's call
	Err  error
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("boltmesh: collective: rank %d called %s, this rank %s: %v", e.Rank, e.Got, e.Want, ErrMismatch)
}

func (e *MismatchError) Unwrap() error { return e.Err }

// CallLengthError reports that the ranks passed different lengths (or
// counts) to one collective call: a message of the call from Rank has Got
// bytes where this rank's call expects Want. It wraps ErrLengthMismatch and
// ErrMismatch, and the transport's error when the transport found it. (It
// is not engine.LengthMismatchError, a buffer that does not fit one
// transfer of one rank.)
type CallLengthError struct {
	Rank      int   // the sender
	Want, Got int   // bytes
	Err       error // the transport's error, or nil
}

func (e *CallLengthError) Error() string {
	return fmt.Sprintf("boltmesh: collective: rank %d sent %d bytes, this rank expected %d: %v", e.Rank, e.Got, e.Want, ErrMismatch)
}

// Unwrap returns ErrLengthMismatch, ErrMismatch and the transport's error.
func (e *CallLengthError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLengthMismatch, ErrMismatch}
	}
	return []error{ErrLengthMismatch, ErrMismatch, e.Err}
}

// AbandonedError is the error of a call that another rank gave up because
// the ranks' calls or lengths differ: it wraps the transport's error,
// which names the rank that gave up (so ErrAbandoned), and ErrMismatch, and
// ErrLengthMismatch for lengths, as the call would have failed had this
// rank received the other's messages before its abandon.
type AbandonedError struct {
	Err *plumb.CollAbandonError
}

func (e *AbandonedError) Error() string {
	if e.Err.Why&0xff == whyLength {
		return fmt.Sprintf("%v: the ranks passed different lengths: %v", e.Err, ErrMismatch)
	}
	return fmt.Sprintf("%v: %v", e.Err, ErrMismatch)
}

// Unwrap returns the transport's error, ErrMismatch and, for lengths,
// ErrLengthMismatch.
func (e *AbandonedError) Unwrap() []error {
	if e.Err.Why&0xff == whyLength {
		return []error{e.Err, ErrMismatch, ErrLengthMismatch}
	}
	return []error{e.Err, ErrMismatch}
}

// PartialError is the error of a collective call that failed on this rank
// while other ranks may have completed it (see ErrMayHaveCompleted). It
// wraps ErrMayHaveCompleted and the cause.
type PartialError struct {
	Call string // the call, e.g. "allreduce of float32 with sum"
	Err  error  // why it failed on this rank
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("boltmesh: collective: %s failed on this rank, but other ranks may have completed it: %v", e.Call, e.Err)
}

// Unwrap returns ErrMayHaveCompleted and the cause.
func (e *PartialError) Unwrap() []error { return []error{ErrMayHaveCompleted, e.Err} }

// HeapError reports that the one-sided allreduce's heap area did not
// fit in a rank's symmetric heap. Every rank returns it for the same call.
// It wraps ErrHeapSpace and, on the ranks whose allocation failed, the
// heap's error.
type HeapError struct {
	Need uint64 // bytes of symmetric heap the call needs on every rank
	Err  error  // this rank's allocation error; nil if only another rank's failed
}

// Error names the size needed and the option that sets the heap's size.
func (e *HeapError) Error() string {
	s := fmt.Sprintf("%v: it needs %d bytes free on every rank (engine.Options.HeapSize, default 64 MiB)", ErrHeapSpace, e.Need)
	if e.Err == nil {
		return s + "; another rank has less"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns ErrHeapSpace and this rank's allocation error.
func (e *HeapError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrHeapSpace}
	}
	return []error{ErrHeapSpace, e.Err}
}

// sameCallSteps is the error of ranks at different steps of the same
// collective: they passed different lengths, and so chose different
// algorithms or segment sizes.
type sameCallSteps struct{ err *plumb.CollMismatchError }

func (e sameCallSteps) Error() string {
	return fmt.Sprintf("boltmesh: collective: rank %d is at another step of this %s: the ranks passed different lengths: %v", e.err.Rank, metaString(e.err.Want), ErrMismatch)
}

func (e sameCallSteps) Unwrap() []error { return []error{ErrLengthMismatch, e.err} }

// osLengthMismatch is the error of ranks whose one-sided allreduces have
// different lengths.
type osLengthMismatch struct {
	rank      int
	got, want uint64
}

func (e osLengthMismatch) Error() string {
	return fmt.Sprintf("boltmesh: collective: one-sided allreduce: rank %d passed %d bytes, this rank %d: %v", e.rank, e.got, e.want, ErrMismatch)
}

func (e osLengthMismatch) Unwrap() []error { return []error{ErrLengthMismatch, ErrMismatch} }

func errDType(fn string, d DType) error { return fmt.Errorf("%w (%s: %v)", ErrDType, fn, d) }
func errOp(fn string, o Op) error       { return fmt.Errorf("%w (%s: %v)", ErrOp, fn, o) }
func errCount(fn string, n int) error   { return fmt.Errorf("%w (%s: n = %d)", ErrCount, fn, n) }

// ErrUnsupportedTransport is returned (wrapped) by New for a transport
// without a collective tag space: a nil one (Transport's type keeps every
// other kind out as the program compiles).
var ErrUnsupportedTransport = errors.New("boltmesh: collective: transport has no collective tag space")

// AllocMismatchError is Comm.Alloc's report of the first rank whose
// allocation differs from this rank's, or failed (Failed).
type AllocMismatchError struct {
	Rank          int                    // the rank that disagrees
	Failed        bool                   // its Alloc failed
	Local, Remote engine.SymmetricBuffer // this rank's allocation and its
}

func (e *AllocMismatchError) Error() string {
	if e.Failed {
		return fmt.Sprintf("%v: rank %d could not allocate", ErrAllocMismatch, e.Rank)
	}
	return fmt.Sprintf("%v: this rank got offset %d len %d, rank %d offset %d len %d",
		ErrAllocMismatch, e.Local.Offset, e.Local.Len, e.Rank, e.Remote.Offset, e.Remote.Len)
}

// Unwrap returns ErrAllocMismatch.
func (e *AllocMismatchError) Unwrap() error { return ErrAllocMismatch }
