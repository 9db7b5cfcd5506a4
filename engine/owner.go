package engine

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The owned tag range: the reserved tags the transport lends, whole, to
// one owner (plumb.CollOwner; package collective installs itself) for
// messages that carry a meta word, and the owner decides which of the range's arrivals it still
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
//	the owner asks (DropUnwanted)             -> Wanted for every message queued on the tags it names
//	this rank closes                          -> Progress, carried in GOODBYE's Aux
//	a waiting receive sees a peer close       -> Closed(the peer's GOODBYE Aux)
//
// Without an owner every arrival is wanted and nothing fails.

// ownerRef holds the installed owner, so that it sits behind one atomic
// pointer.
type ownerRef struct{ plumb.CollOwner }

// own installs newOwner's owner unless one is installed, and returns
// the one installed.
func (t *NetTransport) own(newOwner func() plumb.CollOwner) plumb.CollOwner {
	t.progress.mu.Lock()
	defer t.progress.mu.Unlock()
	if o := t.progress.owner.Load(); o != nil {
		return o.CollOwner
	}
	o := &ownerRef{newOwner()}
	t.progress.owner.Store(o)
	return o.CollOwner
}

// owner returns the owner of the owned tag range, or nil.
func (t *NetTransport) owner() plumb.CollOwner {
	if o := t.progress.owner.Load(); o != nil {
		return o.CollOwner
	}
	return nil
}

// ownerProgress is what this rank's GOODBYE tells in its Aux: the owner's
// progress, or 0.
func (t *NetTransport) ownerProgress() uint32 {
	if o := t.owner(); o != nil {
		return o.Progress()
	}
	return 0
}

// unwanted reports whether a message from p for wire tag is one the
// owner of the range no longer wants. p.mu is held.
func (p *peer) unwanted(tag uint32) bool {
	if !isOwnedTag(tag) {
		return false
	}
	o := p.t.owner()
	return o != nil && !o.Wanted(p.rank, tag-ownedTagBase)
}

// WantedMail reports, for a tag of the owned range in a mailbox (relative to
// the range), whether the owner still wants p's part for it. p.mu is
// held.
func (p *peer) WantedMail(tag uint32) bool { return !p.unwanted(ownedTagBase + tag) }

// ownedQueued runs when a message on the owned range for tag, with aux, is queued
// from p: every receive on the range from p waiting on another tag that the
// owner says conflicts with it fails with the owner's error. p.mu is held.
func (p *peer) ownedQueued(tag, aux uint32) {
	o := p.t.owner()
	if o == nil {
		return
	}
	p.failOwnedRecvs(tag, func(u uint32, r *recvReq) error {
		return o.Conflict(p.rank, u-ownedTagBase, r.meta, tag-ownedTagBase, aux)
	})
}

// failOwnedRecvs fails the receives on the owned range from p waiting on every tag
// but skip (0: none is skipped) for which errFor returns an error, with
// it; errFor is asked of the receives of one tag in order until it returns
// nil. p.mu is held.
func (p *peer) failOwnedRecvs(skip uint32, errFor func(u uint32, r *recvReq) error) {
	p.m.failWaiting(func(u uint32) bool { return u != skip && isOwnedTag(u) }, errFor)
}

// ownedPosting returns the error a receive on the owned range from p for tag,
// expecting meta, fails with instead of being posted, as the owner says:
// its own (Posting), or a conflict with a message queued on another tag.
// p.mu is held.
func (p *peer) ownedPosting(tag, meta uint32) error {
	o := p.t.owner()
	if o == nil {
		return nil
	}
	if err := o.Posting(p.rank, tag-ownedTagBase, meta); err != nil {
		return err
	}
	return p.m.firstQueued(func(u uint32) bool { return u != tag && isOwnedTag(u) }, func(u, aux uint32) error {
		return o.Conflict(p.rank, tag-ownedTagBase, meta, u-ownedTagBase, aux)
	})
}

// abandonOwned sends an ABANDON for tag tag of the owned range with why to every
// peer that is up, on the control stream, without waiting.
func (t *NetTransport) abandonOwned(tag uint32, why uint64) {
	if tag >= plumb.CollTags {
		return
	}
	for _, p := range t.view().peers {
		if !p.up() {
			continue
		}
		h := frame.Header{Kind: frame.KindAbandon, Src: uint32(t.rank), Tag: ownedTagBase + tag, Offset: why}
		p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
	}
}

// abandoned handles p's ABANDON on wire tag with why: the owner hears of
// it, and every receive on the owned range from p waiting is checked again
// (Posting). p.mu is held.
func (p *peer) abandoned(tag uint32, why uint64) {
	o := p.t.owner()
	if o == nil {
		return
	}
	o.Abandoned(p.rank, tag-ownedTagBase, why)
	p.failOwnedRecvs(0, func(u uint32, r *recvReq) error {
		return o.Posting(p.rank, u-ownedTagBase, r.meta)
	})
}

// dropUnwanted drops, from every peer, the queued messages on the range
// that the owner no longer wants.
func (t *NetTransport) dropUnwanted(first, n uint32) {
	if t.owner() == nil {
		return
	}
	for _, p := range t.view().peers {
		p.dropUnwanted(first, n)
		if mb := t.mailboxOf(p.rank); mb != nil && mb.DropDue() {
			p.mu.Lock() // the owner's lock rule
			mb.Drop(p)
			p.mu.Unlock()
		}
	}
}

// dropUnwanted drops the queued messages on the range from p that the owner
// no longer wants, releasing their credit (the senders of queued RTSs are
// told to send nothing).
//
// A look without the lock that finds nothing held skips it. A message
// queued meanwhile is one the owner wanted as it arrived: one of the call
// beginning, or of one already over that passed Wanted before this call
// began; nothing receives that one, and the next call's beginning drops
// it (the owner names the tags of the two calls before it), before its
// tags come round again (callSlots/2 calls later).
func (p *peer) dropUnwanted(first, n uint32) {
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
	p.m.dropQueued(ownedTagBase+first, n, p.unwanted, func(m queuedMsg) {
		if m.bb != nil {
			freed += m.cost()
			ioloop.PutBuffer(m.bb)
		} else {
			p.rdv.takeCopy(m.id)
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

// onAbandon is ABANDON's arrive row (kinds.go): no payload, no credit,
// never queued; the owner is told (abandoned).
func (p *peer) onAbandon(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	if !isOwnedTag(h.Tag) {
		p.violation(c, fmt.Errorf("%w: ABANDON on tag %#x, outside the owned tag range", ErrProtocol, h.Tag))
		return
	}
	p.mu.Lock()
	p.abandoned(h.Tag, h.Offset)
	p.mu.Unlock()
}
