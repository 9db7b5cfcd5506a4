package plumb

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
)

// RequestSizeError is returned by Service.SendFrame, PostFrame and
// QueueFrame for a request larger than its receiver can hold
// (Service.RequestMax): nothing is sent. It unwraps to frame.ErrTooLarge.
type RequestSizeError struct {
	Rank  int    // the receiver
	Size  uint64 // the request's payload, in bytes
	Limit uint64 // the largest the receiver holds
}

func (e *RequestSizeError) Error() string {
	return fmt.Sprintf("request of %d bytes to rank %d, which holds at most %d", e.Size, e.Rank, e.Limit)
}

// Unwrap returns frame.ErrTooLarge.
func (e *RequestSizeError) Unwrap() error { return frame.ErrTooLarge }

var (
	// ErrHandlerSet is returned by Service.SetServiceHandler when a
	// handler is already installed (package rpc exports it as
	// rpc.ErrAgentExists).
	ErrHandlerSet = errors.New("boltmesh: the transport already has a service handler (an rpc.Agent)")
	// ErrSelfFrame: a service frame was addressed to this rank; the
	// service (package rpc) answers calls to its own rank without the
	// transport.
	ErrSelfFrame = errors.New("boltmesh: service frames cannot be sent to this rank")
	// ErrInFlight means a receive that may give up while its message is
	// being read in (the deadline allreduce of package collective) did:
	// the buffer stays the transport's until the message is in or its
	// sender is lost, and the caller must not touch it.
	ErrInFlight = errors.New("boltmesh: receive given up while its message was being read in")
	// ErrCollAbandoned means another rank gave up the collective call in
	// progress: it found that the ranks' calls differ, refused its arguments,
	// ran out of time, or was itself told.
	ErrCollAbandoned = errors.New("boltmesh: another rank gave up the collective call")
)

// ErrCollMismatch means a collective message came from a call that does
// not match this rank's: another collective, element type or reduction
// (*CollMismatchError), or another length (*CollLengthError). The ranks
// called their collectives differently; nothing was mixed.
var ErrCollMismatch = errors.New("boltmesh: collective calls differ between ranks")

// CollMismatchError is a collective message whose call meta (the word the
// collective layer derives from its call) differs from the one expected.
type CollMismatchError struct {
	Rank      int    // the sender
	Tag       uint32 // collective tag of its message
	Want, Got uint32 // metas
	// OtherStep means the sender is at another step of the same call:
	// this rank waited for tag WantTag instead.
	OtherStep bool
	WantTag   uint32
}

func (e *CollMismatchError) Error() string {
	if e.OtherStep {
		return fmt.Sprintf("boltmesh: collective message from rank %d has tag %d (meta %#x) while this rank waits for tag %d (meta %#x) of the same call: %v", e.Rank, e.Tag, e.Got, e.WantTag, e.Want, ErrCollMismatch)
	}
	return fmt.Sprintf("boltmesh: collective message from rank %d (tag %d) has meta %#x, this rank's call has %#x: %v", e.Rank, e.Tag, e.Got, e.Want, ErrCollMismatch)
}

// Unwrap returns ErrCollMismatch.
func (e *CollMismatchError) Unwrap() error { return ErrCollMismatch }

// CollLengthError is a collective message whose length differs from the
// one this rank's call expects.
type CollLengthError struct {
	Rank      int    // the sender
	Tag       uint32 // collective tag
	Want, Got int    // bytes
}

func (e *CollLengthError) Error() string {
	return fmt.Sprintf("boltmesh: collective message from rank %d (tag %d) has %d bytes, this rank expects %d: %v", e.Rank, e.Tag, e.Got, e.Want, ErrCollMismatch)
}

// Unwrap returns ErrCollMismatch.
func (e *CollLengthError) Unwrap() error { return ErrCollMismatch }

// InFlightError is the error of a receive that gave up (Err: its ctx's
// error, or ErrTimeout) while rank Rank's message was being read into its
// buffer. It wraps ErrInFlight and Err.
type InFlightError struct {
	Rank int
	Err  error
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("recv rank %d: %v: %v", e.Rank, ErrInFlight, e.Err)
}

// Unwrap returns ErrInFlight and the cause.
func (e *InFlightError) Unwrap() []error { return []error{ErrInFlight, e.Err} }

// CollAbandonError is the error of a collective receive whose sender gave
// up the call. It wraps ErrCollAbandoned.
type CollAbandonError struct {
	Rank int    // the rank that gave up
	Tag  uint32 // the receive's collective tag
	Why  uint64 // what the rank said made it give up (its ABANDON's), 0 if nothing
}

func (e *CollAbandonError) Error() string {
	return fmt.Sprintf("boltmesh: rank %d gave up the collective call of tag %d: %v", e.Rank, e.Tag, ErrCollAbandoned)
}

// Unwrap returns ErrCollAbandoned.
func (e *CollAbandonError) Unwrap() error { return ErrCollAbandoned }

// Sentinels of the lent range's messaging (Wire).
var (
	// ErrNotQueued is a try Post's: no message was queued.
	ErrNotQueued = errors.New("boltmesh: no message queued")
	// ErrPending is a Poll Wait's: the send is not over.
	ErrPending = errors.New("boltmesh: send not over yet")
	// ErrWithdrawn is a Now Wait's: the receive was withdrawn before any
	// message claimed it.
	ErrWithdrawn = errors.New("boltmesh: receive withdrawn")
)

// MetaError reports a message on the lent range whose meta is not the
// one its receive expects.
type MetaError struct {
	Rank      int    // the sender
	Tag       uint32 // its tag, relative to the range
	Want, Got uint32 // metas
}

func (e *MetaError) Error() string {
	return fmt.Sprintf("boltmesh: message from rank %d (tag %d) has meta %#x, its receive expects %#x", e.Rank, e.Tag, e.Got, e.Want)
}
