package engine

import (
	"context"
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Receives on the owned range posted ahead of their wait: an owner posts
// several, one per peer, so that the event loop reads each peer's message
// straight into its buffer as it arrives (a rendezvous message's DATA
// moves only once its receive is posted), and then waits for them one by
// one, each as recvOwnedFromPeer waits. The deadline allreduce's root
// posts its receives from many leaves at once this way, so that their
// uploads overlap.

// postedRecv is a receive on the owned range posted ahead of its wait
// (postOwnedFrom). Finish it with exactly one of wait, waitColl, cancel
// or drop.
type postedRecv struct {
	t *NetTransport
	p *peer
	r *recvReq
}

// postOwnedFrom posts a receive from rank from under tag tag of the owned
// range, expecting meta, into dst, and returns without waiting: dst is the
// transport's until the receive is finished. A message already queued
// completes it at once, and so does an error (a queued message longer than
// dst, the peer lost, the owner refusing the receive), which its wait
// returns.
func (t *NetTransport) postOwnedFrom(from int, tag, meta uint32, dst []byte) (postedRecv, error) {
	if tag >= plumb.CollTags {
		return postedRecv{}, ErrReservedTag
	}
	if err := t.checkRank(from); err != nil {
		return postedRecv{}, err
	}
	p := t.peer(from)
	r := t.newRecv(from, ownedTagBase+tag, dst, true, waitOpts{meta: meta, checkMeta: true})
	if posted, err := p.match(r, false, true, ownedOp); !posted {
		r.complete(err) // or r's own outcome, filled from the queued message
	}
	return postedRecv{t: t, p: p, r: r}, nil
}

// wait is recvOwnedFromPeer's wait for the posted receive: it gives up
// only when its peer is lost, ctx ends or deadline passes (ErrTimeout;
// zero: none), and waits for bytes being read in until inFlightUntil,
// after which it returns an *plumb.InFlightError and dst stays the
// transport's.
func (pr postedRecv) wait(ctx context.Context, deadline, inFlightUntil time.Time) (int, error) {
	w := ownedFromWait(ctx, pr.r.meta, deadline, inFlightUntil)
	err := pr.t.wait(pr.p, pr.r, w)
	n, _, err := pr.t.recvDone(pr.r, err, w)
	return n, ownedErr(err)
}

// waitColl is recvOwnedInto's wait for the posted receive: it gives up
// when ctx ends or any peer is lost (a collective needs every rank), and
// a message being read in is waited for whatever ends the wait, so that
// dst is free when it returns.
func (pr postedRecv) waitColl(ctx context.Context) (int, error) {
	w := ownedWait(pr.t, ctx, pr.r.meta)
	err := pr.t.wait(pr.p, pr.r, w)
	n, _, err := pr.t.recvDone(pr.r, err, w)
	return n, pr.t.lossErr(ownedErr(err))
}

// cancel finishes the receive at once if no message has claimed it (it is
// withdrawn), else once that message is in or its peer is lost: dst is
// free when it returns.
func (pr postedRecv) cancel() {
	pr.t.withdraw(pr.p, pr.r, nil)
	pr.t.recycle(pr.r)
}

// drop finishes the receive without waiting: it is withdrawn if nothing
// has claimed it. It reports whether dst may be reused: false while a
// message's bytes are still being read into it, and then dst stays the
// transport's until that message is in or the peer is lost.
func (pr postedRecv) drop() bool {
	// leave's withdrawal, and its wait for bytes being read in until a
	// time long past: nothing waits.
	err := pr.t.leave(pr.p, pr.r, ErrTimeout, waitOpts{leaveAt: time.Unix(1, 0)})
	if errors.Is(err, plumb.ErrInFlight) {
		return false // claimed: completed by the transport, with nobody waiting
	}
	pr.t.recycle(pr.r)
	return true
}

// ownedFromWait is the waitOpts of recvOwnedFromPeer and of a posted
// receive's wait.
func ownedFromWait(ctx context.Context, meta uint32, deadline, inFlightUntil time.Time) waitOpts {
	w := waitOpts{op: ownedOp, meta: meta, checkMeta: true}
	if ctx != nil {
		w.cancel, w.ctx = ctx.Done(), ctx
	}
	if !deadline.IsZero() {
		w.timeout = max(time.Until(deadline), time.Nanosecond)
	}
	if !inFlightUntil.IsZero() {
		w.leave, w.leaveAt = true, inFlightUntil
	}
	return w
}
