package shm

import (
	"errors"
	"fmt"
)

// Sentinel errors of package shm, usually wrapped in one of the typed
// errors below. Test for them with errors.Is.
var (
	// ErrNotSealed means an object lacks the seals (F_SEAL_SHRINK and
	// F_SEAL_GROW) that stop its holders resizing it, or cannot be sealed
	// at all (not a memfd or anonymous shm object).
	ErrNotSealed = errors.New("shm: object not sealed against resizing")
	// ErrSize means an object's size is not the expected one, or a size
	// argument is not positive.
	ErrSize = errors.New("shm: wrong size")
	// ErrTruncated means descriptors sent with a message were lost or
	// refused: the control buffer overflowed (MSG_CTRUNC) or more than
	// maxFDs came. The descriptors that did arrive have been closed.
	ErrTruncated = errors.New("shm: descriptors truncated")
	// ErrTooLong means a message is longer than MaxMsg (sending) or than
	// the buffer given to RecvFDs (receiving).
	ErrTooLong = errors.New("shm: message too long")
	// ErrEmpty means a message of zero bytes: SendFDs refuses one, and a
	// zero length prefix on the wire is a framing error.
	ErrEmpty = errors.New("shm: empty message")
	// ErrHostID means the host identity (boot id, namespace) cannot be
	// read.
	ErrHostID = errors.New("shm: host identity unavailable")
)

// ObjectError reports an object that Check refused. It wraps ErrNotSealed
// (Field "seals": Got is the seal mask found, Want the mask required) or
// ErrSize (Field "size": Got and Want are sizes in bytes).
type ObjectError struct {
	Field string // "seals" or "size"
	Got   int64  // what the object has
	Want  int64  // what Check requires
	Err   error  // ErrNotSealed or ErrSize
}

func (e *ObjectError) Error() string {
	if e.Field == "seals" {
		return fmt.Sprintf("%v: seals %#x, want %#x", e.Err, e.Got, e.Want)
	}
	return fmt.Sprintf("%v: %s %d, want %d", e.Err, e.Field, e.Got, e.Want)
}

// Unwrap returns Err.
func (e *ObjectError) Unwrap() error { return e.Err }

// MessageError reports a message whose length SendFDs or RecvFDs refused.
// It wraps ErrTooLong or ErrEmpty.
type MessageError struct {
	Op  string // "send" or "recv"
	Len int    // the message's length (from its prefix, for "recv")
	Max int    // MaxMsg for "send", the buffer's length for "recv"
	Err error  // ErrTooLong or ErrEmpty
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("shm: %s message of %d bytes (limit %d): %v", e.Op, e.Len, e.Max, e.Err)
}

// Unwrap returns Err.
func (e *MessageError) Unwrap() error { return e.Err }

// FDError reports descriptors that RecvFDs lost or refused. It wraps
// ErrTruncated. The Got descriptors that arrived have been closed.
type FDError struct {
	Got       int  // descriptors that arrived
	Max       int  // the maxFDs given to RecvFDs
	Truncated bool // the kernel dropped some (MSG_CTRUNC)
}

func (e *FDError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("%v: control data truncated after %d fds (max %d)", ErrTruncated, e.Got, e.Max)
	}
	return fmt.Sprintf("%v: %d fds, max %d", ErrTruncated, e.Got, e.Max)
}

// Unwrap returns ErrTruncated.
func (e *FDError) Unwrap() error { return ErrTruncated }

// ArgError reports an argument out of range, naming the function and the
// argument. It wraps Err (ErrSize for sizes).
type ArgError struct {
	Func  string // "Create", "Check" or "Map"
	Arg   string // the argument's name
	Value int    // its value
	Err   error
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("shm: %s: %s=%d: %v", e.Func, e.Arg, e.Value, e.Err)
}

// Unwrap returns Err.
func (e *ArgError) Unwrap() error { return e.Err }

// HostIDError reports the part of the host identity HostID could not read.
// It matches both ErrHostID and Err with errors.Is.
type HostIDError struct {
	Source string // what HostID read, e.g. "/proc/sys/kernel/random/boot_id"
	Err    error  // the cause
}

func (e *HostIDError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrHostID, e.Source, e.Err)
}

// Unwrap returns ErrHostID and the cause.
func (e *HostIDError) Unwrap() []error { return []error{ErrHostID, e.Err} }
