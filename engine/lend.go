package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/match"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/spin"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The lent tag range: plumb.Tags reserved tags, apart from users' and the
// barrier's, lent whole to one owner (plumb.Owner; package collective
// installs itself) through plumb.Wire, the primitives it builds on: a
// send and a posted receive carrying a meta word (the frame header's
// Aux), a wait, a hold on a link's polling, a word told to every peer,
// and a neighbour pair's mailbox. Every receive names the meta it
// expects, and a message with another one fails it (*plumb.MetaError).
// The transport asks the owner, with the peer's mu held, at the points
// plumb.Owner lists, and knows nothing of what it does with the range.
// Operations on the range are reported under the owner's name (ownedOp).

// ownedTagBase is the first tag of the lent range.
const ownedTagBase = TagReservedBase + 0x0100_0000

// ownedOp is the operation errors on the lent range name: what users call
// its owner's operations (the name it was lent under), or "lent" before
// an owner is installed.
func (t *NetTransport) ownedOp() string {
	if o := t.progress.owner.Load(); o != nil {
		return o.name
	}
	return "lent"
}

// isOwnedTag reports whether a wire tag is in the lent range.
func isOwnedTag(tag uint32) bool { return tag-ownedTagBase < plumb.Tags }

// ownerRef holds the installed owner and its name, so that they sit
// behind one atomic pointer.
type ownerRef struct {
	plumb.Owner
	name string
}

// owner returns the owner of the lent range, or nil.
func (t *NetTransport) owner() plumb.Owner {
	if o := t.progress.owner.Load(); o != nil {
		return o.Owner
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

// Lend implements plumb.Wire.
func (h *plumbing) Lend(name string, newOwner func() plumb.Owner) plumb.Owner {
	t := h.t()
	t.progress.mu.Lock()
	defer t.progress.mu.Unlock()
	if o := t.progress.owner.Load(); o != nil {
		return o.Owner
	}
	o := &ownerRef{Owner: newOwner(), name: name}
	t.progress.owner.Store(o)
	return o.Owner
}

// Send implements plumb.Wire.
func (h *plumbing) Send(ctx context.Context, to int, tag, meta uint32, p []byte, m plumb.SendMode) (plumb.Handle, error) {
	t := h.t()
	if tag >= plumb.Tags {
		return plumb.Handle{}, ErrReservedTag
	}
	switch m {
	case plumb.SendPost:
		return plumb.Handle{}, t.postOwned(to, tag, meta, p)
	case plumb.SendWait:
		if err := ctx.Err(); err != nil {
			return plumb.Handle{}, err
		}
		err := t.sendAux(ctx.Done(), to, ownedTagBase+tag, meta, p)
		if errors.Is(err, ioloop.ErrCanceled) {
			return plumb.Handle{}, ctx.Err()
		}
		return plumb.Handle{}, t.lossErr(err)
	}
	o, err := t.startSend(ctx.Done(), to, ownedTagBase+tag, meta, p, m == plumb.SendCopy)
	switch {
	case err == nil:
	case errors.Is(err, ioloop.ErrCanceled):
		return plumb.Handle{}, ctx.Err()
	case m == plumb.SendCopy:
		return plumb.Handle{}, t.lossErr(err)
	default:
		return plumb.Handle{}, err
	}
	if o.p == nil {
		return plumb.Handle{}, nil // completed: to this rank
	}
	s := lentSends.Get().(*lentSend)
	s.o = o
	return plumb.MakeHandle(s), nil
}

// lentSend is a started send on the lent range, pooled: a pointer, so
// that a Handle refers to it without allocating once the pool is warm.
type lentSend struct{ o sendOp }

// Late reports whether the send's receiver reads its buffer when it
// takes the message (single copy): plumb.Handle.Late.
func (s *lentSend) Late() bool { return s.o.s != nil && s.o.s.copy != 0 }

var lentSends = sync.Pool{New: func() any { return new(lentSend) }}

// postOwned is Send's SendPost.
func (t *NetTransport) postOwned(to int, tag, meta uint32, p []byte) error {
	if err := t.checkRank(to); err != nil {
		return err
	}
	pr := t.peer(to)
	if !pr.up() {
		return t.sendSelf(pr, ownedTagBase+tag, meta, p)
	}
	window := pr.out.Window()
	cost := frame.Cost(uint64(len(p)))
	if window == 0 || cost > t.opts.eagerMax(window)/4 || !pr.out.Take(cost) {
		return ErrNoCredit
	}
	h := frame.Header{Kind: frame.KindSend, Src: uint32(t.rank), Tag: ownedTagBase + tag, Aux: meta}
	if err := pr.link.post(laneData, h, p, true); err != nil {
		return t.connErr(pr, t.ownedOp(), err)
	}
	return nil
}

// Post implements plumb.Wire.
func (h *plumbing) Post(from int, tag, meta uint32, dst []byte, try bool) (plumb.Handle, error) {
	t := h.t()
	if tag >= plumb.Tags {
		return plumb.Handle{}, ErrReservedTag
	}
	if err := t.checkRank(from); err != nil {
		return plumb.Handle{}, err
	}
	p := t.peer(from)
	r := t.newRecv(from, ownedTagBase+tag, dst, true, waitOpts{meta: meta, checkMeta: true})
	if posted, err := p.match(r, try, true, t.ownedOp()); !posted {
		if err == errNotQueued {
			t.recycle(r)
			return plumb.Handle{}, err
		}
		// Over already: filled from a queued message, or failed. Its Wait
		// takes no token (settled).
		r.err, r.settled = err, true
	}
	return plumb.MakeHandle(r), nil
}

// Wait implements plumb.Wire.
func (h *plumbing) Wait(peer int, hd plumb.Handle, w plumb.Waiting) (int, bool, error) {
	t := h.t()
	switch x := hd.Ref().(type) {
	case *recvReq:
		return t.waitLent(t.peer(peer), x, w)
	case *lentSend:
		return 0, false, t.finishLent(x, w)
	case nil:
		if w.Site == nil {
			if w.How&plumb.All == 0 {
				return 0, false, nil
			}
			return 0, false, t.lossErr(lostErr(t.view(), t.ownedOp())) // a look at the view only: no wait set up
		}
		if err := t.checkRank(peer); err != nil {
			return 0, false, err
		}
		found, err := t.watch(t.peer(peer), w)
		return 0, found, err
	}
	return 0, false, fmt.Errorf("boltmesh: Wait on a handle of %T", hd.Ref())
}

// lentWait is the waitOpts of a wait w for a receive expecting meta.
func lentWait(t *NetTransport, w plumb.Waiting, meta uint32) waitOpts {
	wo := waitOpts{op: t.ownedOp(), meta: meta, checkMeta: true}
	if w.Ctx != nil {
		wo.cancel, wo.ctx = w.Ctx.Done(), w.Ctx
	}
	if w.How&plumb.All != 0 {
		wo.anyLost, wo.ownerClose = true, t.owner() != nil
	}
	if u := w.Until; u != nil {
		if !u.Deadline.IsZero() {
			wo.timeout = max(time.Until(u.Deadline), time.Nanosecond)
		}
		if !u.InFlight.IsZero() {
			wo.leave, wo.leaveAt = true, u.InFlight
		}
	}
	return wo
}

// waitLent is Wait for a receive r from p.
func (t *NetTransport) waitLent(p *peer, r *recvReq, w plumb.Waiting) (n int, found bool, err error) {
	wo := lentWait(t, w, r.meta)
	switch {
	case r.settled:
	case w.How&plumb.Now != 0:
		if !wo.leave {
			err = t.withdraw(p, r, plumb.ErrWithdrawn)
		} else {
			err = t.leave(p, r, plumb.ErrWithdrawn, wo)
		}
		if err == plumb.ErrWithdrawn {
			t.recycle(r)
			return 0, false, err
		}
	case w.Site != nil:
		spun, slept := p.spin.Budget(t.spinBudget()), time.Now()
		site := waitSite{kind: siteLook, look: w.Site.Look, wake: w.Site.Wake}
		done, cause := t.sleep(p, r, &site, wo, nil)
		if cause == nil {
			p.spin.Slept(spun, slept, t.spinBudget())
		}
		if !done && cause == nil {
			return 0, true, nil // r stays posted: its owner finishes it (Now)
		}
		if !done {
			err = t.withdraw(p, r, cause)
		}
	default:
		err = t.wait(p, r, wo)
	}
	n, _, err = t.recvDone(r, err, wo)
	if w.How&plumb.All != 0 {
		err = t.lossErr(err)
	}
	return n, false, err
}

// finishLent is Wait for a send s.
func (t *NetTransport) finishLent(s *lentSend, w plumb.Waiting) error {
	if w.How&plumb.Poll != 0 && !s.done() {
		return plumb.ErrPending
	}
	var cancel <-chan struct{}
	switch {
	case w.How&plumb.Now != 0:
		cancel = closedChan
	case w.Ctx != nil:
		cancel = w.Ctx.Done()
	}
	err := t.finishSend(s.o, cancel)
	s.o = sendOp{}
	lentSends.Put(s)
	switch {
	case err == nil:
	case errors.Is(err, ioloop.ErrCanceled) && w.How&plumb.Now != 0:
		err = nil // dropped, as asked
	case errors.Is(err, ioloop.ErrCanceled) && w.Ctx != nil:
		err = w.Ctx.Err()
	case w.How&plumb.All != 0:
		err = t.lossErr(err)
	}
	return err
}

// done reports, without waiting, whether the send is over.
func (s *lentSend) done() bool {
	switch o := s.o; {
	case o.s != nil:
		if o.s.state.Load() == rdvWaiting {
			return false
		}
		for i := range o.s.k {
			if !o.s.ws[i].Done() {
				return false
			}
		}
		return true
	case o.p == nil:
		return true
	}
	return s.o.w.Done()
}

// closedChan is a cancel channel that has already fired.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// watch is Wait's spin on w.Site with no receive posted: the first looks
// (one only where spinning is disabled), then the spin (spinSite) for
// p's budget. (Its owner looked for a lost peer just before: Wait with
// a zero handle and no site.)
func (t *NetTransport) watch(p *peer, w plumb.Waiting) (bool, error) {
	looks := 1
	if t.spinBudget() > 0 {
		looks = spin.LookStep(t.topo.crowded.Load())
	}
	if found, err := w.Site.Look(looks); found || err != nil {
		if found {
			p.spin.Note(false)
		}
		return found, err
	}
	site := waitSite{kind: siteLook, look: w.Site.Look, wake: w.Site.Wake}
	found, err := t.spinSite(p, &site, p.spin.Budget(t.spinBudget()), lentWait(t, w, 0))
	if found {
		p.spin.Note(false)
	}
	return found, t.lossErr(err)
}

// Hold implements plumb.Wire: the lane that brings rank's data.
func (h *plumbing) Hold(rank int, on bool) bool {
	t := h.t()
	if rank < 0 || rank >= t.world {
		return false
	}
	p := t.peer(rank)
	if !on {
		// As a goroutine that will poll again soon: the wait that follows
		// asks for a bell if it sleeps.
		p.link.polled(laneData)
		return false
	}
	if !p.up() || t.spinBudget() <= 0 {
		return false
	}
	p.link.polling(laneData, true)
	return true
}

// Mailbox implements plumb.Wire.
func (h *plumbing) Mailbox(rank int) *linkshm.Mailbox { return h.t().mailboxOf(rank) }

// mailboxOf returns the mailbox of rank r's link if r is a neighbour, or
// nil.
func (t *NetTransport) mailboxOf(r int) *linkshm.Mailbox {
	if r < 0 || r >= t.world {
		return nil
	}
	return t.peer(r).can().mailbox
}

// Tell implements plumb.Wire.
func (h *plumbing) Tell(tag uint32, word uint64) {
	t := h.t()
	if tag >= plumb.Tags {
		return
	}
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		h := frame.Header{Kind: frame.KindAbandon, Src: uint32(t.rank), Tag: ownedTagBase + tag, Offset: word}
		p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
	}
}

// onAbandon is ABANDON's arrive row (kinds.go): no payload, no credit,
// never queued; the owner is told (Judge, Told), and every receive on the
// range from p waiting is judged again.
func (p *peer) onAbandon(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	if !isOwnedTag(h.Tag) {
		p.violation(c, fmt.Errorf("%w: ABANDON on tag %#x, outside the owned tag range", ErrProtocol, h.Tag))
		return
	}
	o := p.t.owner()
	if o == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	o.Judge(p.rank, 0, 0, plumb.Event{Kind: plumb.Told, Tag: h.Tag - ownedTagBase, Word: h.Offset})
	p.failOwnedRecvs(0, func(u uint32, r *recvReq) error {
		return o.Judge(p.rank, u-ownedTagBase, r.meta, plumb.Event{})
	})
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

// WantedMail reports, for a tag of the range in a mailbox (relative to
// the range), whether the owner still wants p's part for it
// (linkshm.Wanter).
func (p *peer) WantedMail(tag uint32) bool { return !p.unwanted(ownedTagBase + tag) }

// ownedQueued runs when a message on the range for tag, with aux, is
// queued from p: every receive on the range from p waiting on another tag
// that the owner judges it fails fails with the owner's error. p.mu is
// held.
func (p *peer) ownedQueued(tag, aux uint32) {
	o := p.t.owner()
	if o == nil {
		return
	}
	e := plumb.Event{Kind: plumb.Queued, Tag: tag - ownedTagBase, Meta: aux}
	p.failOwnedRecvs(tag, func(u uint32, r *recvReq) error {
		return o.Judge(p.rank, u-ownedTagBase, r.meta, e)
	})
}

// failOwnedRecvs fails the receives on the range from p waiting on every
// tag but skip (0: none is skipped) for which errFor returns an error,
// with it; errFor is asked of the receives of one tag in order until it
// returns nil. p.mu is held.
func (p *peer) failOwnedRecvs(skip uint32, errFor func(u uint32, r *recvReq) error) {
	p.m.failWaiting(func(u uint32) bool { return u != skip && isOwnedTag(u) }, errFor)
}

// ownedPosting returns the error a receive on the range from p for tag,
// expecting meta, fails with instead of being posted, as the owner judges
// it: as posted, then against each message queued on another tag. p.mu
// is held.
func (p *peer) ownedPosting(tag, meta uint32) error {
	o := p.t.owner()
	if o == nil {
		return nil
	}
	if err := o.Judge(p.rank, tag-ownedTagBase, meta, plumb.Event{}); err != nil {
		return err
	}
	return p.m.FirstQueued(func(u uint32) bool { return u != tag && isOwnedTag(u) }, func(u, aux uint32) error {
		return o.Judge(p.rank, tag-ownedTagBase, meta, plumb.Event{Kind: plumb.Queued, Tag: u - ownedTagBase, Meta: aux})
	})
}

// closedInRange returns an error if, in view v, a peer closed in order
// leaving the receives on the range waiting now unanswerable, as the
// owner judges it (Closed), or nil.
func (t *NetTransport) closedInRange(v *worldView, op string) error {
	o := t.owner()
	if o == nil {
		return nil
	}
	for _, d := range v.Left {
		if d.Closed && o.Judge(d.Rank, 0, 0, plumb.Event{Kind: plumb.Closed, Word: uint64(d.OwnerDone)}) != nil {
			return &PeerError{Op: op, Rank: d.Rank, Err: ErrPeerLost, Cause: ErrPeerClosed}
		}
	}
	return nil
}

// Forget implements plumb.Wire.
func (h *plumbing) Forget(first, n uint32) {
	t := h.t()
	if t.owner() == nil {
		return
	}
	for _, p := range t.view().Peers {
		p.dropUnwanted(first, n)
		if mb := t.mailboxOf(p.rank); mb != nil && mb.DropDue() {
			p.mu.Lock() // the owner's lock rule
			mb.Drop(p)
			p.mu.Unlock()
		}
	}
}

// dropUnwanted drops the queued messages on the range from p that the
// owner no longer wants, releasing their credit (the senders of queued
// RTSs are told to send nothing).
//
// A look without the lock that finds nothing held skips it. A message
// queued meanwhile is one the owner wanted as it arrived: one of the call
// beginning, or of one already over that passed Wanted before this call
// began; nothing receives that one, and the next call's beginning drops
// it (the owner names the tags of the two calls before it), before its
// tags come round again (callSlots/2 calls later).
func (p *peer) dropUnwanted(first, n uint32) {
	if p.m.Empty() {
		return
	}
	p.mu.Lock()
	if p.m.Empty() {
		p.mu.Unlock()
		return
	}
	var freed uint64
	var answer []uint64
	p.m.DropQueued(ownedTagBase+first, n, p.unwanted, func(m match.Msg) {
		if m.Buf != nil {
			freed += m.Cost()
			ioloop.PutBuffer(m.Buf)
		} else {
			p.rdv.takeCopy(m.ID)
			answer = append(answer, m.ID)
		}
	})
	p.mu.Unlock()
	if freed > 0 {
		p.freeCredit(freed)
	}
	for _, id := range answer {
		p.answerRTS(id, false, false)
	}
}
