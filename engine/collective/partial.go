package collective

import "context"

// Failed calls that may have completed elsewhere: see the package
// documentation ("Failed calls") for what a rank's error says about the
// others.

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
