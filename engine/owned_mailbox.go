package engine

import (
	"context"
	"time"

	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// mailboxOf returns the mailbox of rank r's link if r is a neighbour, or
// nil.
func (t *NetTransport) mailboxOf(r int) *linkshm.Mailbox {
	if r < 0 || r >= t.world {
		return nil
	}
	if l := t.peer(r).link; l != nil {
		return l.mailbox()
	}
	return nil
}

// exchangeMail is exchangeOwned with a neighbour that is both to and
// from, when both out and in are at most plumb.MailboxMax bytes, through the
// pair's mailbox (internal/link/shm/mailbox.go): this rank's part is written there, and the
// neighbour's waited for there, for Options.Spin, then asleep: a receive
// for the step is posted too, and the neighbour's writer, seeing this side
// asleep, sends a WAKE. The posted receive is what fails the exchange as a
// frame receive would (the neighbour gave the call up, is at another
// step, closed or was lost). A frame that arrives for it wins over the
// mailbox: the neighbour exchanged by frames (its in was longer than
// plumb.MailboxMax), so this rank's part follows as a frame too.
//
// On a crowded machine (more ranks than cores) the mailbox is watched for
// crowdedSpin, and the core given up between looks (yieldCore): a look
// is a cache line's read, cheap enough to share a core with the rank it
// waits for, which a wake-up per step is not.
func (t *NetTransport) exchangeMail(ctx context.Context, p *peer, mb *linkshm.Mailbox, tag, meta uint32, out, in []byte) (int, error) {
	mb.Lock()
	defer mb.Unlock()
	if err := t.view().lostErr(ownedOp); err != nil {
		return 0, t.lossErr(err)
	}
	asleep, ok := mb.Post(tag, meta, out)
	if !ok {
		return 0, t.mailClosed(p)
	}
	if asleep {
		t.wakeNeighbour(p)
	}
	// The first looks, before the wait is set up: the neighbour's part is
	// often in already, or comes within them (one look only where
	// spinning is disabled).
	looks := 1
	if t.spinBudget() > 0 {
		looks = t.spinLooks()
	}
	if n, got, found, _ := mb.Watch(tag, in, looks); found {
		p.spin.note(false)
		return mailResult(p.rank, tag, meta, n, got, in)
	}
	w := ownedWait(t, ctx, meta)
	site := waitSite{kind: siteMail, mb: mb, tag: tag, meta: meta, in: in}
	spun := p.spin.budget(t.spinBudget())
	found, err := t.spinSite(p, &site, spun, w)
	switch {
	case err != nil:
		return 0, t.lossErr(err)
	case found:
		p.spin.note(false)
		return mailResult(p.rank, tag, meta, site.n, site.got, in)
	}
	slept := time.Now()
	n, byFrame, err := t.sleepMail(p, &site, w)
	if err == nil {
		p.spin.slept(spun, slept, t.spinBudget())
	}
	if byFrame && err == nil {
		err = t.sendOwned(ctx, p.rank, tag, meta, out)
	}
	return n, err
}

// mailResult checks the neighbour's part taken from the mailbox: n bytes
// with meta got, for a step expecting meta and at most len(in) bytes.
func mailResult(from int, tag, meta uint32, n int, got uint32, in []byte) (int, error) {
	switch {
	case n > len(in):
		return 0, &plumb.CollLengthError{Rank: from, Tag: tag, Want: len(in), Got: n}
	case got != meta:
		return 0, &plumb.CollMismatchError{Rank: from, Tag: tag, Want: meta, Got: got}
	}
	return n, nil
}

// mailClosed is the error of an exchange whose mailbox was closed: this
// transport's Close. (A mailbox outlives its link, as a neighbour's
// mapped heap does, so that the part of a neighbour that closed in order
// right after writing it is still read.)
func (t *NetTransport) mailClosed(p *peer) error {
	return &PeerError{Op: ownedOp, Rank: p.rank, Err: ErrClosed}
}

// testHookMail, if set (by tests, before any transport runs), is called
// by a mailbox exchange's wait at the points named by the hook constants,
// to make a race's other side happen there.
var testHookMail func(t *NetTransport, at int)

const (
	hookSpinMissed = iota // spinMail: a look missed
	hookSawPart           // sleepMail: the part is in, the receive not yet withdrawn
)

// sleepMail is exchangeMail's wait once the spin is over: a receive for
// the step is posted, this side is marked asleep, and it sleeps (wait.go)
// until the receive completes, the part is in, or the give-up set fires.
func (t *NetTransport) sleepMail(p *peer, s *waitSite, w waitOpts) (n int, byFrame bool, err error) {
	mb, tag, meta, in := s.mb, s.tag, s.meta, s.in
	r := t.newRecv(p.rank, ownedTagBase+tag, in, true, w)
	posted, err := p.match(r, false, true, w.op)
	if !posted {
		n, err = t.ownedDone(r, err, w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	}
	mb.Sleep(true)
	defer mb.Sleep(false)
	done, cause := t.sleep(p, r, s, w, nil)
	switch {
	case done:
		n, err = t.ownedDone(r, nil, w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	case cause != nil:
		n, err = t.ownedDone(r, t.withdraw(p, r, cause), w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	}
	// The part is in the mailbox: take the receive back (unless a frame
	// came for it meanwhile, which wins, or it failed meanwhile: the
	// neighbour closed once done with the step), then the part.
	if testHookMail != nil {
		testHookMail(t, hookSawPart)
	}
	p.mu.Lock()
	withdrawn := p.m.withdraw(r)
	p.mu.Unlock()
	if !withdrawn {
		<-r.done
		n, err = t.ownedDone(r, nil, w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	}
	t.recycle(r)
	n, got, found, shut := mb.Take(tag, in)
	switch {
	case found:
		n, err = mailResult(p.rank, tag, meta, n, got, in)
		return n, false, err
	case shut:
		return 0, false, t.mailClosed(p)
	}
	// Rewritten since it was seen: the neighbour gave the call up and went
	// on. The receive says so.
	n, err = t.recvOwnedInto(w.ctx, p.rank, tag, meta, in)
	return n, false, err
}

// mailOr ends an exchange whose posted receive ended with n and err
// (nil: a frame came for it, byFrame): a receive that failed gives way
// to the neighbour's part if it is in the mailbox by now, as a message
// that arrived wins over the neighbour's ABANDON that came after it, or
// over a give-up that found it already there.
func (t *NetTransport) mailOr(p *peer, mb *linkshm.Mailbox, tag, meta uint32, in []byte, n int, err error) (int, bool, error) {
	if err == nil {
		return n, true, nil
	}
	if m, got, found, _ := mb.Take(tag, in); found {
		m, err = mailResult(p.rank, tag, meta, m, got, in)
		return m, false, err
	}
	return n, false, err
}

// mailConflict returns the error an exchange on tag expecting meta fails
// with because the neighbour's part of another step is in the mailbox,
// as the owner of the range judges it (a frame for another step
// queued while a receive waits, CollOwner.Conflict), or nil.
func (t *NetTransport) mailConflict(p *peer, mb *linkshm.Mailbox, tag, meta uint32) error {
	o := t.owner()
	if o == nil {
		return nil
	}
	other, got, ok := mb.Stray(tag)
	if !ok || mb.Ready(tag) {
		// No other part; or the one waited for came too, written before
		// that other (the neighbour went on to its next step after taking
		// this rank's part), after the look that missed it.
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return o.Conflict(p.rank, tag, meta, other, got)
}

// ownedDone ends a receive r on the owned range whose wait ended with err, as
// recvOwnedInto does.
func (t *NetTransport) ownedDone(r *recvReq, err error, w waitOpts) (int, error) {
	n, _, err := t.recvDone(r, err, w)
	return n, t.lossErr(ownedErr(err))
}

// wakeNeighbour sends p, a neighbour asleep on its mailbox, a WAKE.
func (t *NetTransport) wakeNeighbour(p *peer) {
	h := frame.Header{Kind: frame.KindWake, Src: uint32(t.rank)}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
}
