package engine

import (
	"math"
	"sync"
	"sync/atomic"
)

// The membership view. What this rank knows of the world is one value, a
// view: the peers by rank, and the ones that left, in the order this rank
// learned it, numbered by an epoch. A view is never written once
// published: a change (changeView) copies the current one, alters the
// copy, publishes it with the next epoch and closes the old one's next
// channel, which wakes whoever waits for the world to change. A peer that
// leaves (lost, or closed in order) is no longer a member of the next
// view, but keeps its place in peers, where operations addressed to it
// find how it left. Formation fills the first view; the world's size is
// fixed at formation (NetTransport.world) until ranks can join.
//
// Lock rule: membership.mu serializes changes; readers load the current
// view (NetTransport.view) and hold no lock.

// membership holds the current view.
type membership struct {
	cur atomic.Pointer[view]
	mu  sync.Mutex // held by changeView
}

// view is one membership of the world. Every field is read-only once the
// view is published.
type view struct {
	epoch uint64 // 0 at formation, one more at each change
	peers []*peer
	// left: the peers that left, in the order this rank learned it, each
	// once.
	left []departure
	// loss is the first loss known, and the peers that closed after it
	// (loss.go).
	loss lossState
	// broken is the first peer this rank saw lost without a GOODBYE (not
	// one only reported by another's GOODBYE), or -1: the operations that
	// need every rank fail of it (lostErr).
	broken int
	// closedBarriers is the fewest barriers completed by a peer that
	// closed in order (math.MaxUint64: none did), and closedRank that
	// peer: later barriers cannot complete (closedBefore).
	closedBarriers uint64
	closedRank     int
	next           chan struct{} // closed once the next view is published
}

// departure is a peer that left the world.
type departure struct {
	rank      int
	closed    bool   // closed in order (GOODBYE); otherwise lost
	cause     error  // lost: what broke its connection
	ownerDone uint32 // closed: the owner's progress its GOODBYE told (plumb.Owner.Progress)
}

// firstView returns the view a transport of world ranks starts with:
// every peer a member, none left.
func firstView(peers []*peer) *view {
	v := &view{peers: peers, broken: -1, closedBarriers: math.MaxUint64, closedRank: -1, next: make(chan struct{})}
	v.loss.first = -1
	return v
}

// view returns the current membership view.
func (t *NetTransport) view() *view { return t.members.cur.Load() }

// peer returns rank r's peer, r a checked rank.
func (t *NetTransport) peer(r int) *peer { return t.members.cur.Load().peers[r] }

// changeView publishes the next view: a copy of the current one that
// change alters, unless it reports false (nothing changed), with the next
// epoch; the current one's next channel is then closed. change runs under
// membership.mu and must take no other lock.
func (t *NetTransport) changeView(change func(v *view) bool) {
	m := &t.members
	m.mu.Lock()
	old := m.cur.Load()
	v := *old
	v.left = append([]departure(nil), old.left...)
	v.loss.closedAfter = append([]int(nil), old.loss.closedAfter...)
	if !change(&v) {
		m.mu.Unlock()
		return
	}
	v.epoch, v.next = old.epoch+1, make(chan struct{})
	m.cur.Store(&v)
	m.mu.Unlock()
	close(old.next)
}

// member reports whether rank r is in the view: in the world, and not
// left.
func (v *view) member(r int) bool {
	if r < 0 || r >= len(v.peers) {
		return false
	}
	return v.departed(r) == nil
}

// departed returns rank r's departure, or nil if it has not left.
func (v *view) departed(r int) *departure {
	for i := range v.left {
		if v.left[i].rank == r {
			return &v.left[i]
		}
	}
	return nil
}

// lostErr returns, as an error of op, the first peer this rank saw lost
// without a GOODBYE, or nil: what fails the operations that need every
// rank.
func (v *view) lostErr(op string) error {
	if v.broken < 0 {
		return nil
	}
	return &PeerError{Op: op, Rank: v.broken, Err: ErrPeerLost, Cause: v.departed(v.broken).cause}
}

// noteLoss makes the next view: rank's connection broke of cause, without
// a GOODBYE. It runs before the peer's receives fail, so that their
// errors name the first loss (lossErr), and so does a GOODBYE this rank
// sends once they have. It reports whether rank left now (its first
// departure).
func (t *NetTransport) noteLoss(rank int, cause error) (left bool) {
	t.changeView(func(v *view) bool {
		first, firstCause := v.loss.first, v.loss.cause
		v.loss.lost(rank, cause)
		changed := v.loss.first != first || v.loss.cause != firstCause
		if v.departed(rank) == nil {
			v.left = append(v.left, departure{rank: rank, cause: cause})
			changed, left = true, true
		}
		if v.broken < 0 {
			v.broken, changed = rank, true
		}
		return changed
	})
	return left
}

// noteClosed makes the next view: rank closed in order after completing
// done barriers, with coll the owned range's owner's progress its GOODBYE
// told, reporting lost as the first loss it knew of (-1: none). Barriers
// after those, and the receives on the owned range the owner says it left
// unanswerable (closedInRange), can no longer complete.
func (t *NetTransport) noteClosed(rank int, done uint64, coll uint32, lost int) {
	t.changeView(func(v *view) bool {
		if v.departed(rank) != nil {
			return false
		}
		v.loss.closed(rank, lost)
		if done < v.closedBarriers {
			v.closedBarriers, v.closedRank = done, rank
		}
		v.left = append(v.left, departure{rank: rank, closed: true, ownerDone: coll})
		return true
	})
}

// closedBefore returns an error if, in view v, a peer closed before
// completing barrier number epoch, or nil.
func (v *view) closedBefore(epoch uint64, op string) error {
	if v.closedBarriers >= epoch {
		return nil
	}
	return &PeerError{Op: op, Rank: v.closedRank, Err: ErrPeerLost, Cause: ErrPeerClosed}
}

// changeCause returns why a wait w must end in view v: a peer lost (if
// w.anyLost), or peers that closed in order (see waitOpts.epoch and
// ownerClose); nil if none.
func (t *NetTransport) changeCause(v *view, w waitOpts) error {
	if w.anyLost {
		if err := v.lostErr(w.op); err != nil {
			return err
		}
	}
	if w.epoch > 0 {
		if err := v.closedBefore(w.epoch, w.op); err != nil {
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
