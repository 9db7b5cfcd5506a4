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
