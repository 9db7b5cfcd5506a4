package collective

import (
	"context"
	"errors"
	"fmt"
)

// Failed calls that may have completed elsewhere: see the package
// documentation ("Failed calls") for what a rank's error says about the
// others.

// ErrMayHaveCompleted means a collective call failed on this rank after
// this rank had sent part of its data (or in a collective where other
// ranks may complete without this rank's data): other ranks may have
// completed the call, with results that include this rank's part, while
// this rank reports an error. Errors wrapping it are *PartialError.
var ErrMayHaveCompleted = errors.New("boltmesh: collective: the call may have completed on other ranks")

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

// sending runs before each message of a call that this rank hands the
// transport: a ctx that has ended fails the step before anything is sent,
// and otherwise the call is noted as one that other ranks may now
// complete (see partial).
func (c *Comm) sending(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sent = true
	return nil
}

// partial returns err, the error of the call in progress, as a
// *PartialError if other ranks may have completed the call.
func (c *Comm) partial(err error) error {
	if c.t.WorldSize() == 1 {
		return err
	}
	switch c.kind {
	case kindAllReduce, kindAllGather, kindReduceScatter, kindAllToAll:
		if !c.sent {
			return err
		}
	}
	return &PartialError{Call: metaString(c.meta), Err: err}
}
