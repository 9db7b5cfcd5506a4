package engine

import (
	"context"
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Sends on the owned range that do not wait, and receives that care
// about one peer only: what an owner's algorithm needs that must never be
// held up by a slow, stopped or lost rank (the deadline allreduce of
// package collective).

// ownedSend is a message on the owned range being sent (startOwnedSend). Finish it with
// exactly one of Wait or Drop; its zero value is a completed send.
type ownedSend struct {
	t *NetTransport
	o sendOp
}

// startOwnedSend starts sending p to rank to under tag tag of the owned range with meta
// and returns without waiting for the bytes to go out (only, if need be,
// for flow-control credit, until ctx ends): p must stay untouched until
// Wait or Drop returns. A message above the eager limit waits at the
// receiver, unread, until a receive takes it.
func (t *NetTransport) startOwnedSend(ctx context.Context, to int, tag, meta uint32, p []byte) (ownedSend, error) {
	if tag >= plumb.CollTags {
		return ownedSend{}, ErrReservedTag
	}
	o, err := t.startOwned(ctx, to, tag, meta, p, false)
	return ownedSend{t: t, o: o}, err
}

// Done reports, without waiting, whether the send is over: Wait or Drop
// would return at once.
func (s ownedSend) Done() bool {
	switch {
	case s.o.s != nil:
		st := s.o.s.state.Load()
		if st == rdvWaiting {
			return false
		}
		for i := range s.o.s.k {
			if !s.o.s.ws[i].Done() {
				return false
			}
		}
		return true
	case s.o.p == nil:
		return true
	}
	return s.o.w.Done()
}

// Wait waits until the message is sent (its receiver took it, for one
// that waits for that), or ctx ends: then, as SendContext, it is dropped
// if it is not yet committed.
func (s ownedSend) Wait(ctx context.Context) error {
	if s.t == nil {
		return nil
	}
	err := s.t.finishSend(s.o, ctx.Done())
	if errors.Is(err, ioloop.ErrCanceled) {
		return ctx.Err()
	}
	return err
}

// Drop ends the send: a message the receiver has not taken is withdrawn
// (a rendezvous one, which takes one exchange with the receiver) or, if
// no byte of it went out, dropped; one already committed is sent whole in
// the background. It returns once p may be reused.
func (s ownedSend) Drop() {
	if s.t != nil {
		s.t.finishSend(s.o, closedChan)
	}
}

// postOwned sends a short message on the owned range (at most a quarter of the
// eager limit) without waiting at all: p is copied. It fails with
// ErrNoCredit if the receiver holds so much of this rank's that there is
// no credit left for it.
func (t *NetTransport) postOwned(to int, tag, meta uint32, p []byte) error {
	if tag >= plumb.CollTags {
		return ErrReservedTag
	}
	if err := t.checkRank(to); err != nil {
		return err
	}
	pr := t.peer(to)
	if !pr.up() {
		return t.sendSelf(pr, ownedTagBase+tag, meta, p)
	}
	window := pr.out.Window()
	cost := frame.Cost(uint64(len(p)))
	if window == 0 || cost > t.eagerMax(window)/4 || !pr.out.Take(cost) {
		return ErrNoCredit
	}
	h := frame.Header{Kind: frame.KindSend, Src: uint32(t.rank), Tag: ownedTagBase + tag, Aux: meta}
	if err := pr.link.post(laneData, h, p, true); err != nil {
		return t.connErr(pr, ownedOp, err)
	}
	return nil
}

// recvOwnedFromPeer is recvOwnedInto that gives up only when rank from is lost
// (or ctx ends, or deadline passes: ErrTimeout; zero: none), not when any
// other rank is lost or closes: for an owner's call that goes on without
// ranks that left. If it gives up while the message's bytes are being
// read into dst, it waits for them until inFlightUntil (zero: for as long
// as they take); once that passes too (a sender stopped halfway), it
// returns an *plumb.InFlightError, and dst stays the transport's until the
// message is in or from is lost. Times rather than contexts, so that a
// deadline allreduce allocates nothing.
func (t *NetTransport) recvOwnedFromPeer(ctx context.Context, from int, tag, meta uint32, dst []byte, deadline, inFlightUntil time.Time) (int, error) {
	if tag >= plumb.CollTags {
		return 0, ErrReservedTag
	}
	n, _, err := t.recv(from, ownedTagBase+tag, dst, true, ownedFromWait(ctx, meta, deadline, inFlightUntil))
	return n, ownedErr(err)
}
