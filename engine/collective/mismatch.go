package collective

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/engine"
)

// ErrMismatch means the ranks called their collectives differently: another
// collective, element type or reduction (*MismatchError), or another
// length (then the error also wraps ErrLengthMismatch). It is
// engine.ErrCollMismatch, which transports report; nothing was combined.
var ErrMismatch = engine.ErrCollMismatch

// ErrAbandoned means another rank gave up the call in progress: it found
// that the ranks' calls differ, refused its arguments, ran out of time (its
// ctx), or was told so by a third; this rank's part of it could never
// complete. It is
// engine.ErrCollAbandoned; errors wrapping it are *engine.CollAbandonError,
// which names the rank.
var ErrAbandoned = engine.ErrCollAbandoned

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

// LengthMismatchError reports a message of a call whose length differs
// from the one this rank's call expects: the ranks passed different
// lengths (or counts). It wraps ErrLengthMismatch and ErrMismatch, and
// the transport's error when the transport found it.
type LengthMismatchError struct {
	Rank      int   // the sender
	Want, Got int   // bytes
	Err       error // the transport's error (*engine.CollLengthError), or nil
}

func (e *LengthMismatchError) Error() string {
	return fmt.Sprintf("boltmesh: collective: rank %d sent %d bytes, this rank expected %d: %v", e.Rank, e.Got, e.Want, ErrMismatch)
}

// Unwrap returns ErrLengthMismatch, ErrMismatch and the transport's error.
func (e *LengthMismatchError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLengthMismatch, ErrMismatch}
	}
	return []error{ErrLengthMismatch, ErrMismatch, e.Err}
}

// Why a rank gave up a call, as its abandon says (engine.CollAbandonError's
// Why: the code in the low byte, the rank's call meta in the high 32
// bits). The abandon may arrive before the messages in which its peers
// would have found the same cause (it travels apart from them), so it
// carries the cause.
const (
	whyOther    = 0 // refused arguments, its ctx, or unknown
	whyMismatch = 1 // the ranks' calls differ (ErrMismatch)
	whyLength   = 2 // the ranks' lengths differ (ErrMismatch and ErrLengthMismatch)
)

// abandonWhy is what this rank's abandon says of err, the failure of its
// call in progress.
func (c *Comm) abandonWhy(err error) uint64 {
	why := uint64(whyOther)
	switch {
	case errors.Is(err, ErrLengthMismatch) && errors.Is(err, ErrMismatch):
		why = whyLength
	case errors.Is(err, ErrMismatch):
		why = whyMismatch
	}
	return why | uint64(c.meta)<<32
}

// AbandonedError is the error of a call that another rank gave up because
// the ranks' calls or lengths differ: it wraps the transport's
// *engine.CollAbandonError (so ErrAbandoned) and ErrMismatch, and
// ErrLengthMismatch for lengths, as the call would have failed had this
// rank received the other's messages before its abandon.
type AbandonedError struct {
	Err *engine.CollAbandonError
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

// withCause turns the error of this rank's call, if another rank gave the
// call up for a mismatch, into an *AbandonedError, inside a
// *MismatchError that names both calls if the abandoning rank's call
// differs from this one's; other errors pass unchanged.
func (c *Comm) withCause(err error) error {
	var ae *engine.CollAbandonError
	var done *AbandonedError
	if !errors.As(err, &ae) || errors.As(err, &done) {
		return err
	}
	why, meta := ae.Why&0xff, uint32(ae.Why>>32)
	switch {
	case why == whyMismatch && meta != 0 && meta != c.meta:
		return &MismatchError{Rank: ae.Rank, Want: metaString(c.meta), Got: metaString(meta), Err: &AbandonedError{Err: ae}}
	case why == whyMismatch || why == whyLength:
		return &AbandonedError{Err: ae}
	}
	return err
}

// explain turns a transport's mismatch error into one that says what the
// two calls were; other errors pass unchanged.
func explain(err error) error {
	if err == nil {
		return nil
	}
	var me *engine.CollMismatchError
	if errors.As(err, &me) && me.OtherStep && me.Want == me.Got {
		return sameCallSteps{me}
	}
	if errors.As(err, &me) {
		return &MismatchError{Rank: me.Rank, Want: metaString(me.Want), Got: metaString(me.Got), Err: err}
	}
	var le *engine.CollLengthError
	if errors.As(err, &le) {
		return &LengthMismatchError{Rank: le.Rank, Want: le.Want, Got: le.Got, Err: err}
	}
	return err
}

// sameCallSteps is the error of ranks at different steps of the same
// collective: they passed different lengths, and so chose different
// algorithms or segment sizes.
type sameCallSteps struct{ err *engine.CollMismatchError }

func (e sameCallSteps) Error() string {
	return fmt.Sprintf("boltmesh: collective: rank %d is at another step of this %s: the ranks passed different lengths: %v", e.err.Rank, metaString(e.err.Want), ErrMismatch)
}

func (e sameCallSteps) Unwrap() []error { return []error{ErrLengthMismatch, e.err} }
