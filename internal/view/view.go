// Package view is the membership view: what a rank knows of the world as
// one value, the peers by rank and the ones that left, in the order this
// rank learned it, numbered by an epoch. A view is never written once
// published: a change (Members.Change) copies the current one, alters the
// copy, publishes it with the next epoch and closes the old one's Next
// channel, which wakes whoever waits for the world to change. A peer that
// leaves (lost, or closed in order) is no longer a member of the next
// view, but keeps its place in Peers, where operations addressed to it
// find how it left. The view also keeps the first loss this rank knows
// of (Loss). The world's size is fixed at formation until ranks can join.
//
// Lock rule: Members.mu serializes changes and is a leaf; readers Load
// the current view and hold no lock.
package view

import (
	"math"
	"sync"
	"sync/atomic"
)

// Members holds the current view of a world of peers of type P.
type Members[P any] struct {
	cur atomic.Pointer[View[P]]
	mu  sync.Mutex // held by Change
}

// View is one membership of the world. Every field is read-only once the
// view is published.
type View[P any] struct {
	Epoch uint64 // 0 at formation, one more at each change
	Peers []P    // by rank, those that left too
	// Left are the peers that left, in the order this rank learned it,
	// each once.
	Left []Departure
	// Loss is the first loss known, and the peers that closed after it.
	Loss Loss
	// Broken is the first peer this rank saw lost without a goodbye (not
	// one only reported by another's goodbye), or -1: the operations that
	// need every rank fail of it.
	Broken int
	// ClosedBarriers is the fewest barriers completed by a peer that
	// closed in order (math.MaxUint64: none did), and ClosedRank that
	// peer: later barriers cannot complete.
	ClosedBarriers uint64
	ClosedRank     int
	Next           chan struct{} // closed once the next view is published
}

// Departure is a peer that left the world.
type Departure struct {
	Rank      int
	Closed    bool   // closed in order (a goodbye); otherwise lost
	Cause     error  // lost: what broke its connection
	OwnerDone uint32 // closed: the owner's progress its goodbye told
}

// Start publishes the first view of a world of peers: every peer a
// member, none left.
func (m *Members[P]) Start(peers []P) {
	v := &View[P]{Peers: peers, Broken: -1, ClosedBarriers: math.MaxUint64, ClosedRank: -1, Next: make(chan struct{})}
	v.Loss.First = -1
	m.cur.Store(v)
}

// Load returns the current view.
func (m *Members[P]) Load() *View[P] { return m.cur.Load() }

// Change publishes the next view: a copy of the current one that change
// alters, unless it reports false (nothing changed), with the next epoch;
// the current one's Next channel is then closed. change runs under
// Members.mu and must take no other lock.
func (m *Members[P]) Change(change func(v *View[P]) bool) {
	m.mu.Lock()
	old := m.cur.Load()
	v := *old
	v.Left = append([]Departure(nil), old.Left...)
	v.Loss.ClosedAfter = append([]int(nil), old.Loss.ClosedAfter...)
	if !change(&v) {
		m.mu.Unlock()
		return
	}
	v.Epoch, v.Next = old.Epoch+1, make(chan struct{})
	m.cur.Store(&v)
	m.mu.Unlock()
	close(old.Next)
}

// Lost makes the next view: rank's connection broke of cause, without a
// goodbye. It reports whether rank left now (its first departure).
func (m *Members[P]) Lost(rank int, cause error) (left bool) {
	m.Change(func(v *View[P]) bool {
		was := v.Loss
		v.Loss.lost(rank, cause)
		changed := v.Loss.First != was.First || v.Loss.Cause != was.Cause || v.Loss.Reported != was.Reported
		if v.Departed(rank) == nil {
			v.Left = append(v.Left, Departure{Rank: rank, Cause: cause})
			changed, left = true, true
		}
		if v.Broken < 0 {
			v.Broken, changed = rank, true
		}
		return changed
	})
	return left
}

// Closed makes the next view: rank closed in order after completing done
// barriers, with ownerDone its owner's progress, its goodbye reporting
// lost as the first loss it knew of (-1: none).
func (m *Members[P]) Closed(rank int, done uint64, ownerDone uint32, lost int) {
	m.Change(func(v *View[P]) bool {
		if v.Departed(rank) != nil {
			return false
		}
		v.Loss.closed(rank, lost)
		if done < v.ClosedBarriers {
			v.ClosedBarriers, v.ClosedRank = done, rank
		}
		v.Left = append(v.Left, Departure{Rank: rank, Closed: true, OwnerDone: ownerDone})
		return true
	})
}

// Member reports whether rank r is in the view: in the world, and not
// left.
func (v *View[P]) Member(r int) bool {
	if r < 0 || r >= len(v.Peers) {
		return false
	}
	return v.Departed(r) == nil
}

// Departed returns rank r's departure, or nil if it has not left.
func (v *View[P]) Departed(r int) *Departure {
	for i := range v.Left {
		if v.Left[i].Rank == r {
			return &v.Left[i]
		}
	}
	return nil
}
