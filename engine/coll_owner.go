package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The owner of the collective tag range (plumb.CollOwner; package
// collective installs it) decides which of the range's arrivals it still
// wants and when a receive in the range fails; the engine asks it at these
// points, with the peer's mu held, and knows nothing of what it does with
// the range:
//
//	a message arrives (deliverSend, an RTS)   -> Wanted: false drops it, its credit
//	                                             released, an RTS answered "send nothing"
//	it is queued, no receive took it          -> Conflict for the receives waiting on the
//	                                             range's other tags: an error fails them
//	a receive is posted, nothing queued       -> Posting, then Conflict for the messages
//	                                             queued on the range's other tags (match)
//	an ABANDON arrives                        -> Abandoned, then Posting again for every
//	                                             receive waiting in the range
//	the owner asks (DropUnwanted)             -> Wanted for every queued message
//	this rank closes                          -> Progress, carried in GOODBYE's Aux
//	a waiting receive sees a peer close       -> Closed(the peer's GOODBYE Aux)
//
// Without an owner every arrival is wanted and nothing fails.

// ownerRef holds the installed owner, so that it sits behind one atomic
// pointer.
type ownerRef struct{ plumb.CollOwner }

// ownColl installs newOwner's owner unless one is installed, and returns
// the one installed.
func (t *NetTransport) ownColl(newOwner func() plumb.CollOwner) plumb.CollOwner {
	t.progress.mu.Lock()
	defer t.progress.mu.Unlock()
	if o := t.progress.owner.Load(); o != nil {
		return o.CollOwner
	}
	o := &ownerRef{newOwner()}
	t.progress.owner.Store(o)
	return o.CollOwner
}

// collOwner returns the owner of the collective tag range, or nil.
func (t *NetTransport) collOwner() plumb.CollOwner {
	if o := t.progress.owner.Load(); o != nil {
		return o.CollOwner
	}
	return nil
}

// collProgress is what this rank's GOODBYE tells in its Aux: the owner's
// progress, or 0.
func (t *NetTransport) collProgress() uint32 {
	if o := t.collOwner(); o != nil {
		return o.Progress()
	}
	return 0
}

// unwanted reports whether a message from p for wire tag is one the
// owner of the collective tags no longer wants. p.mu is held.
func (p *peer) unwanted(tag uint32) bool {
	if !isCollTag(tag) {
		return false
	}
	o := p.t.collOwner()
	return o != nil && !o.Wanted(p.rank, tag-collTagBase)
}

// WantedMail reports, for a collective tag in a mailbox (relative to
// the range), whether the owner still wants p's part for it. p.mu is
// held.
func (p *peer) WantedMail(tag uint32) bool { return !p.unwanted(collTagBase + tag) }

// collQueued runs when a collective message for tag, with aux, is queued
// from p: every collective receive from p waiting on another tag that the
// owner says conflicts with it fails with the owner's error. p.mu is held.
func (p *peer) collQueued(tag, aux uint32) {
	o := p.t.collOwner()
	if o == nil {
		return
	}
	p.failCollRecvs(tag, func(u uint32, r *recvReq) error {
		return o.Conflict(p.rank, u-collTagBase, r.meta, tag-collTagBase, aux)
	})
}

// failCollRecvs fails the collective receives from p waiting on every tag
// but skip (0: none is skipped) for which errFor returns an error, with
// it; errFor is asked of the receives of one tag in order until it returns
// nil. p.mu is held.
func (p *peer) failCollRecvs(skip uint32, errFor func(u uint32, r *recvReq) error) {
	p.m.failWaiting(func(u uint32) bool { return u != skip && isCollTag(u) }, errFor)
}

// collPosting returns the error a collective receive from p for tag,
// expecting meta, fails with instead of being posted, as the owner says:
// its own (Posting), or a conflict with a message queued on another tag.
// p.mu is held.
func (p *peer) collPosting(tag, meta uint32) error {
	o := p.t.collOwner()
	if o == nil {
		return nil
	}
	if err := o.Posting(p.rank, tag-collTagBase, meta); err != nil {
		return err
	}
	return p.m.firstQueued(func(u uint32) bool { return u != tag && isCollTag(u) }, func(u, aux uint32) error {
		return o.Conflict(p.rank, tag-collTagBase, meta, u-collTagBase, aux)
	})
}

// abandonColl sends an ABANDON for collective tag tag with why to every
// peer that is up, on the control stream, without waiting.
func (t *NetTransport) abandonColl(tag uint32, why uint64) {
	if tag >= plumb.CollTags {
		return
	}
	for _, p := range t.view().peers {
		if !p.up() {
			continue
		}
		h := frame.Header{Kind: frame.KindAbandon, Src: uint32(t.rank), Tag: collTagBase + tag, Offset: why}
		p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
	}
}

// abandoned handles p's ABANDON on wire tag with why: the owner hears of
// it, and every collective receive from p waiting is checked again
// (Posting). p.mu is held.
func (p *peer) abandoned(tag uint32, why uint64) {
	o := p.t.collOwner()
	if o == nil {
		return
	}
	o.Abandoned(p.rank, tag-collTagBase, why)
	p.failCollRecvs(0, func(u uint32, r *recvReq) error {
		return o.Posting(p.rank, u-collTagBase, r.meta)
	})
}

// dropUnwanted drops, from every peer, the queued collective messages
// that the owner no longer wants.
func (t *NetTransport) dropUnwanted() {
	if t.collOwner() == nil {
		return
	}
	for _, p := range t.view().peers {
		p.dropUnwanted()
		if mb := t.mailboxOf(p.rank); mb != nil && mb.DropDue() {
			p.mu.Lock() // the owner's lock rule
			mb.Drop(p)
			p.mu.Unlock()
		}
	}
}

// dropUnwanted drops the queued collective messages from p that the owner
// no longer wants, releasing their credit (the senders of queued RTSs are
// told to send nothing).
//
// A look without the lock that finds nothing held skips it. A message
// queued meanwhile is one the owner wanted as it arrived: one of the call
// beginning, or of one already over that passed Wanted before this call
// began; nothing receives that one, and the next call's beginning drops
// it, before its tags come round again (callSlots/2 calls later).
func (p *peer) dropUnwanted() {
	if p.m.held.Load() == 0 {
		return
	}
	p.mu.Lock()
	if p.m.empty() {
		p.mu.Unlock()
		return
	}
	var freed uint64
	var answer []uint64
	p.m.dropQueued(p.unwanted, func(m queuedMsg) {
		if m.bb != nil {
			freed += m.cost()
			ioloop.PutBuffer(m.bb)
		} else {
			answer = append(answer, m.id)
		}
	})
	p.mu.Unlock()
	if freed > 0 {
		p.freeCredit(freed)
	}
	for _, id := range answer {
		p.answerRTS(id, false)
	}
}
