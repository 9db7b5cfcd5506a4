package collective

import (
	"context"
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// A Comm's messages go through the tag range its transport lends it
// (plumb.Wire): a send and a posted receive carrying the call's meta, a
// wait. These are the Comm's few ways of using it; the exchanges built on
// them are in exchange.go and mail.go. The transport's errors for a
// message of another meta or length become the collective's here
// (wireErr).

// send sends p to rank to under tag, with the call's meta, returning once
// p may be reused.
func (c *Comm) send(ctx context.Context, to int, tag uint32, p []byte) error {
	if err := c.sending(ctx); err != nil {
		return err
	}
	_, err := c.wire.Send(ctx, to, tag, c.meta, p, plumb.SendWait)
	return err
}

// start starts sending p to rank to under tag without waiting for it to go
// out (plumb.SendStart): p is the transport's until finish.
func (c *Comm) start(ctx context.Context, to int, tag uint32, p []byte) (plumb.Handle, error) {
	h, err := c.wire.Send(ctx, to, tag, c.meta, p, plumb.SendStart)
	return h, explain(wireErr(err))
}

// recv receives from rank from under tag a message of the call's meta into
// dst. It gives up when ctx ends or any peer is lost (a call needs every
// rank).
func (c *Comm) recv(ctx context.Context, from int, tag uint32, dst []byte) (int, error) {
	n, err := c.take(ctx, from, tag, dst, plumb.All)
	return n, explain(wireErr(err))
}

// take is recv, its errors the transport's; how is plumb.All for a
// call that needs every rank, 0 for one that gives up only when rank
// from is lost (the deadline allreduce's leaf).
func (c *Comm) take(ctx context.Context, from int, tag uint32, dst []byte, how plumb.How) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	h, err := c.wire.Post(from, tag, c.meta, dst, false)
	if err != nil {
		return 0, err
	}
	n, _, err := c.wire.Wait(from, h, plumb.Waiting{Ctx: ctx, How: how})
	return n, err
}

// tryRecv is recv that takes only a message already in: ok is false if
// none is.
func (c *Comm) tryRecv(from int, tag uint32, dst []byte) (int, bool, error) {
	n, ok, err := tryRecvMeta(c.wire, from, tag, c.meta, dst)
	return n, ok, explain(err)
}

// tryRecvMeta is tryRecv of a message carrying meta.
func tryRecvMeta(w plumb.Wire, from int, tag, meta uint32, dst []byte) (int, bool, error) {
	h, err := w.Post(from, tag, meta, dst, true)
	if err == plumb.ErrNotQueued {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, _, err := w.Wait(from, h, plumb.Waiting{How: plumb.All})
	return n, err == nil, wireErr(err)
}

// wait finishes h, a send to or receive from rank peer, for a call that
// needs every rank: until ctx ends or any peer is lost.
func (c *Comm) wait(ctx context.Context, peer int, h plumb.Handle) (int, error) {
	n, _, err := c.wire.Wait(peer, h, plumb.Waiting{Ctx: ctx, How: plumb.All})
	return n, explain(wireErr(err))
}

// drop finishes h at once (plumb.Waiting.Now): a receive is withdrawn, or
// waited for while a message is being read into it; a send not yet
// committed is dropped. Its buffer is the caller's again when it returns.
func (c *Comm) drop(peer int, h plumb.Handle) {
	if h.Live() {
		c.wire.Wait(peer, h, plumb.Waiting{How: plumb.Now})
	}
}

// wireErr turns the transport's errors for a message whose meta or length
// is not what its receive expects into the collective's mismatch errors;
// others pass unchanged.
func wireErr(err error) error {
	if err == nil {
		return nil
	}
	var me *plumb.MetaError
	if errors.As(err, &me) {
		return &plumb.CollMismatchError{Rank: me.Rank, Tag: me.Tag, Want: me.Want, Got: me.Got}
	}
	var te *engine.TruncatedError
	if errors.As(err, &te) {
		return &plumb.CollLengthError{Rank: te.From, Tag: uint32(te.Tag) % plumb.Tags, Want: te.Cap, Got: te.Len}
	}
	return err
}

// opName is what users call collective's operations: the Op of the
// errors the transport reports on its tags (plumb.Wire.Lend), and of its
// own.
const opName = "collective"

// pastInFlight is the time limits of a wait that gives up at once even
// while bytes are being read in: their buffer is then left to the
// transport.
var pastInFlight = &plumb.Until{InFlight: time.Unix(1, 0)}

// nowIf is plumb.Now if b is set.
func nowIf(b bool) plumb.How {
	if b {
		return plumb.Now
	}
	return 0
}
