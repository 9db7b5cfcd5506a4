package engine

import (
	"slices"

	"github.com/boltmesh/boltmesh/frame"
)

// A rank that gives up a collective call that the others may still be in
// (it found that the ranks' calls differ, its arguments were refused, its
// ctx ended: anything but a lost peer, which every rank sees itself)
// tells every peer with
// an ABANDON frame on a tag of the call, with why (what the collective
// layer says made it give up) in its Offset. A peer fails its collective receives from that rank for the
// call, those posted and those posted later, instead of waiting for a part
// that will never come; the collective layer then abandons in turn, so the
// news reaches ranks that wait on a third rank. A peer notes every call
// that a rank gave up until it has left that call behind itself: a rank
// whose ctx has ended may give up several calls in a row before a slower
// peer reaches the first of them.

// AbandonCollCall tells every peer that this rank gave up the collective
// call that owns tag, without waiting: a peer that waits for this rank's
// part of it fails instead (CollAbandonError, with why, which the engine
// carries without reading it). Package collective calls it when a call
// fails of anything but a lost peer. Nothing is sent to lost peers.
//
// The abandon travels on the control stream, so that it never waits
// behind a message that nobody receives, and may therefore arrive before
// messages of the call sent ahead of it: why lets a peer fail with the
// cause it would have found in them.
func (t *NetTransport) abandonCollCall(tag uint32, why uint64) {
	if tag >= CollTags {
		return
	}
	for _, p := range t.peers {
		if !p.up() {
			continue
		}
		h := frame.Header{Kind: frame.KindAbandon, Src: uint32(t.rank), Tag: collTagBase + tag, Offset: why}
		p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
	}
}

// abandon handles p's abandon of the collective call that owns tag: every
// collective receive from p posted for that call fails, and the call is
// noted so that those posted later fail too (abandonedErr). A peer may
// give up several calls before this rank reaches the first (its ctx ends
// at once in each), so every one is noted, until this rank has left it
// behind (forgetAbandoned); why is the abandon's. p.mu is held.
func (p *peer) abandon(tag uint32, why uint64) {
	p.forgetAbandoned(p.t.progress.coll.Load())
	call := (tag - collTagBase) / collCallTags
	if !slices.ContainsFunc(p.abandoned, func(a abandonNote) bool { return a.call == call }) {
		p.abandoned = append(p.abandoned, abandonNote{call: call, why: why})
	}
	p.failCallRecvs(tag, false, func(u uint32, _ *recvReq) error {
		return &CollAbandonError{Rank: p.rank, Tag: u - collTagBase, Why: why}
	})
}

// abandonNote is a collective call that a peer gave up, by index in the
// tag space, and why it said it did.
type abandonNote struct {
	call uint32
	why  uint64
}

// abandonedErr returns the error of a collective receive from p for tag
// if p gave up the call that owns tag, else nil. p.mu is held.
func (p *peer) abandonedErr(tag uint32) error {
	call := (tag - collTagBase) / collCallTags
	i := slices.IndexFunc(p.abandoned, func(a abandonNote) bool { return a.call == call })
	if i < 0 {
		return nil
	}
	return &CollAbandonError{Rank: p.rank, Tag: tag - collTagBase, Why: p.abandoned[i].why}
}

// forgetAbandoned drops the notes of the calls p gave up that are behind
// this rank's call number call (see pastCall): their tags may come round
// again for calls p has not given up. p.mu is held.
func (p *peer) forgetAbandoned(call uint32) {
	p.abandoned = slices.DeleteFunc(p.abandoned, func(a abandonNote) bool {
		return pastCall(call, collTagBase+a.call*collCallTags)
	})
}
