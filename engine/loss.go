package engine

// The first loss. When a rank dies in the middle of a collective call,
// each survivor fails its call with ErrPeerLost, and a program that gives
// up on the error closes its transport, which tells every peer (GOODBYE).
// A survivor that hears such a close before its own connection to the
// dead rank breaks would blame the survivor that closed. So each rank
// keeps the first loss it knows of, and the ranks that closed in order
// after it:
//
//   - a peer whose connection broke without a GOODBYE (noteLoss), or
//   - the rank a closing peer's GOODBYE reports as the first loss it knew
//     of (frame Tag = rank + 1; see frame/spec.md), if none is known yet;
//
// every GOODBYE this rank sends reports its own (sayGoodbye), so the news
// passes on from close to close. The errors of collective operations and
// barriers that fail of a lost or closed peer name that first loss
// (lossErr): *PeerError's Rank and Cause, and ClosedAfter. The record is
// part of the membership view (view.go): each change copies it.

// lossState is the first loss a rank knows of.
type lossState struct {
	first       int   // the first rank known lost, or -1
	cause       error // what broke its connection, or ErrReportedLost if a GOODBYE reported it
	closedAfter []int // the peers that closed in order once first was known, in that order
}

// lost records that rank's connection broke, without a GOODBYE, of cause.
func (s *lossState) lost(rank int, cause error) {
	switch {
	case s.first < 0:
		s.first, s.cause = rank, cause
	case s.first == rank && s.cause == ErrReportedLost:
		s.cause = cause // heard of first, now seen
	}
}

// closed records that rank closed in order; its GOODBYE reported rank
// reported as the first loss it knew of (-1: none).
func (s *lossState) closed(rank, reported int) {
	if s.first < 0 && reported >= 0 {
		s.first, s.cause = reported, ErrReportedLost
	}
	if s.first >= 0 {
		s.closedAfter = append(s.closedAfter, rank)
	}
}

// goodbyeLost decodes the Tag of a GOODBYE from rank from: the first rank
// the sender knew to be lost, or -1 for none (or a rank that cannot be
// one: outside the world, the sender, or this rank, which is alive).
func (t *NetTransport) goodbyeLost(from int, tag uint32) int {
	if tag == 0 || tag > uint32(t.world) {
		return -1
	}
	if r := int(tag) - 1; r != from && r != t.rank {
		return r
	}
	return -1
}

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
	loss := t.view().loss
	first, cause, after := loss.first, loss.cause, append([]int(nil), loss.closedAfter...)
	if first < 0 {
		return err
	}
	return &PeerError{Op: pe.Op, Rank: first, Err: ErrPeerLost, Cause: cause, ClosedAfter: after}
}
