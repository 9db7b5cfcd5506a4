package collective

import (
	"errors"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Why a rank gave up a call, as its abandon says (plumb.CollAbandonError's
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

// withCause turns the error of this rank's call, if another rank gave the
// call up for a mismatch, into an *AbandonedError, inside a
// *MismatchError that names both calls if the abandoning rank's call
// differs from this one's; other errors pass unchanged.
func (c *Comm) withCause(err error) error {
	var ae *plumb.CollAbandonError
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
	var me *plumb.CollMismatchError
	if errors.As(err, &me) && me.OtherStep && me.Want == me.Got {
		return sameCallSteps{me}
	}
	if errors.As(err, &me) {
		return &MismatchError{Rank: me.Rank, Want: metaString(me.Want), Got: metaString(me.Got), Err: err}
	}
	var le *plumb.CollLengthError
	if errors.As(err, &le) {
		return &CallLengthError{Rank: le.Rank, Want: le.Want, Got: le.Got, Err: err}
	}
	return err
}
