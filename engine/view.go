package engine

import "github.com/boltmesh/boltmesh/internal/view"

// The membership view (internal/view): the peers by rank, and the ones
// that left, in the order this rank learned it, numbered by an epoch, and
// the first loss this rank knows of. The world's size is fixed at
// formation (NetTransport.world) until ranks can join. The engine's side
// of it is here: the changes its peers make (noteLoss, noteClosed) and
// the errors a view gives (lostErr, closedBefore, lossErr).
//
// The first loss. When a rank dies in the middle of a collective call,
// each survivor fails its call with ErrPeerLost, and a program that gives
// up on the error closes its transport, which tells every peer (GOODBYE).
// Every GOODBYE this rank sends reports the first loss it knows (frame
// Tag = rank + 1; see frame/spec.md and goodbyeLost), so the news passes
// on from close to close, and the errors of collective operations and
// barriers that fail of a lost or closed peer name that first loss
// (lossErr): *PeerError's Rank and Cause, and ClosedAfter.
//
// Lock rule: internal/view's (changes serialized, readers lock-free).

// members is a transport's membership, its views of its peers.
type members = view.Members[*peer]

// worldView is one view of a transport's world.
type worldView = view.View[*peer]

// view returns the current membership view.
func (t *NetTransport) view() *worldView { return t.members.Load() }

// noteLoss makes the next view: rank's connection broke of cause, without
// a GOODBYE. It runs before the peer's receives fail, so that their
// errors name the first loss (lossErr), and so does a GOODBYE this rank
// sends once they have. It reports whether rank left now (its first
// departure).
func (t *NetTransport) noteLoss(rank int, cause error) (left bool) {
	return t.members.Lost(rank, cause)
}

// noteClosed makes the next view: rank closed in order after completing
// done barriers, with coll the owner's progress its GOODBYE told,
// reporting lost as the first loss it knew of (-1: none). Barriers after
// those, and the receives on the owned range the owner says it left
// unanswerable (closedInRange), can no longer complete.
func (t *NetTransport) noteClosed(rank int, done uint64, coll uint32, lost int) {
	t.members.Closed(rank, done, coll, lost)
}

// lostErr returns, as an error of op, the first peer view v's rank saw
// lost without a GOODBYE, or nil: what fails the operations that need
// every rank.
func lostErr(v *worldView, op string) error {
	if v.Broken < 0 {
		return nil
	}
	return &PeerError{Op: op, Rank: v.Broken, Err: ErrPeerLost, Cause: v.Departed(v.Broken).Cause}
}

// closedBefore returns an error if, in view v, a peer closed before
// completing barrier number epoch, or nil.
func closedBefore(v *worldView, epoch uint64, op string) error {
	if v.ClosedBarriers >= epoch {
		return nil
	}
	return &PeerError{Op: op, Rank: v.ClosedRank, Err: ErrPeerLost, Cause: ErrPeerClosed}
}

// changeCause returns why a wait w must end in view v: a peer lost (if
// w.anyLost), or peers that closed in order (see waitOpts.epoch and
// ownerClose); nil if none.
func (t *NetTransport) changeCause(v *worldView, w waitOpts) error {
	if w.anyLost {
		if err := lostErr(v, w.op); err != nil {
			return err
		}
	}
	if w.epoch > 0 {
		if err := closedBefore(v, w.epoch, w.op); err != nil {
			return err
		}
	}
	if w.ownerClose {
		return t.closedInRange(v, w.op)
	}
	return nil
}

// waitsOnView reports whether a change of the view may end wait w.
func (w *waitOpts) waitsOnView() bool { return w.anyLost || w.epoch > 0 || w.ownerClose }

// lossErr returns err, a collective operation's or a barrier's, naming the
// first loss this rank knows of if err is a *PeerError for a lost or
// closed peer: Rank is the first lost rank, Cause what broke its
// connection (ErrReportedLost if this rank has only heard of it), and
// ClosedAfter the peers that closed after it. Other errors pass as they
// are, and so does every error while no loss is known (a peer that closed
// in order without completing the call is then the one to blame).
func (t *NetTransport) lossErr(err error) error {
	pe, ok := err.(*PeerError)
	if !ok || pe.Err != ErrPeerLost {
		return err
	}
	loss := t.view().Loss
	first, cause, after := loss.First, loss.Cause, append([]int(nil), loss.ClosedAfter...)
	if first < 0 {
		return err
	}
	if loss.Reported {
		cause = ErrReportedLost
	}
	return &PeerError{Op: pe.Op, Rank: first, Err: ErrPeerLost, Cause: cause, ClosedAfter: after}
}
