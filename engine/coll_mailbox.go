package engine

import (
	"context"
	"runtime"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// mailboxOf returns the mailbox of rank r's link if r is a neighbour, or
// nil.
func (t *NetTransport) mailboxOf(r int) *mailbox {
	if r < 0 || r >= t.world {
		return nil
	}
	if l, ok := t.peer(r).link.(*meshLink); ok {
		return l.mail.Load()
	}
	return nil
}

// exchangeMail is exchangeColl with a neighbour that is both to and
// from, when both out and in are at most plumb.MailboxMax bytes, through the
// pair's mailbox (mailbox.go): this rank's part is written there, and the
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
func (t *NetTransport) exchangeMail(ctx context.Context, p *peer, mb *mailbox, tag, meta uint32, out, in []byte) (int, error) {
	mb.xmu.Lock()
	defer mb.xmu.Unlock()
	if err := t.view().lostErr("collective"); err != nil {
		return 0, t.lossErr(err)
	}
	asleep, ok := mb.post(tag, meta, out)
	if !ok {
		return 0, t.mailClosed(p)
	}
	if asleep {
		t.wakeNeighbour(p)
	}
	w := collWait(t, ctx, meta)
	spun := p.spin.budget(t.spinBudget())
	n, got, found, err := t.spinMail(p, mb, tag, in, spun, w)
	switch {
	case err != nil:
		return 0, t.lossErr(err)
	case found:
		p.spin.note(false)
		return mailResult(p.rank, tag, meta, n, got, in)
	}
	slept := time.Now()
	n, byFrame, err := t.sleepMail(p, mb, tag, meta, in, w)
	if err == nil {
		p.spin.slept(spun, slept, t.spinBudget())
	}
	if byFrame && err == nil {
		err = t.sendColl(ctx, p.rank, tag, meta, out)
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
	return &PeerError{Op: "collective", Rank: p.rank, Err: ErrClosed}
}

// spinMail watches the mailbox for the neighbour's part of the exchange
// on tag. It gives up (found false, err nil) after budget, and with an
// error when ctx ends or a peer is lost.
func (t *NetTransport) spinMail(p *peer, mb *mailbox, tag uint32, in []byte, budget time.Duration, w waitOpts) (n int, meta uint32, found bool, err error) {
	every := t.spinLooks()
	if budget <= 0 {
		return 0, 0, false, nil
	}
	var start time.Time
	for {
		n, meta, found, closed := mb.watch(tag, in, every)
		switch {
		case found:
			return n, meta, true, nil
		case closed:
			return 0, 0, false, t.mailClosed(p)
		}
		if testHookMail != nil {
			testHookMail(t, hookSpinMissed)
		}
		if err := t.mailConflict(p, mb, tag, w.meta); err != nil {
			return 0, 0, false, err
		}
		var end error
		select {
		case <-w.cancel:
			end = w.ctx.Err()
		default:
			end = t.view().lostErr(w.op)
		}
		if end != nil {
			// The part may have come since the last look, and the
			// neighbour, done with the step, closed: a part in wins.
			n, meta, found, _ := mb.take(tag, in)
			return n, meta, found, ifNot(found, end)
		}
		if !t.spinPause(&start, budget) {
			return 0, 0, false, nil
		}
	}
}

// testHookMail, if set (by tests, before any transport runs), is called
// by a mailbox exchange's wait at the points named by the hook constants,
// to make a race's other side happen there.
var testHookMail func(t *NetTransport, at int)

const (
	hookSpinMissed = iota // spinMail: a look missed
	hookSawPart           // sleepMail: the part is in, the receive not yet withdrawn
)

// spinLooks is how many looks a spin makes between two pauses: a few on
// a crowded machine, where each pause gives the core up.
func (t *NetTransport) spinLooks() int {
	if t.topo.crowded.Load() {
		return 8
	}
	return 256
}

// spinPause is a spin's pause between looks: it reports false once the
// spin has lasted budget since *start (set at its first pause: the
// first looks often find what they wait for, and need no clock read),
// and otherwise yields, the core too on a crowded machine.
func (t *NetTransport) spinPause(start *time.Time, budget time.Duration) bool {
	if start.IsZero() {
		*start = time.Now()
	} else if time.Since(*start) > budget {
		return false
	}
	runtime.Gosched()
	if t.topo.crowded.Load() {
		yieldCore()
	}
	return true
}

// sleepMail is exchangeMail's wait once the spin is over: a receive for
// the step is posted, this side is marked asleep, and it waits for the
// receive, a WAKE, ctx's end, a peer's loss or close.
func (t *NetTransport) sleepMail(p *peer, mb *mailbox, tag, meta uint32, in []byte, w waitOpts) (n int, byFrame bool, err error) {
	r := t.newRecv(p.rank, collTagBase+tag, in, true, w)
	posted, err := p.match(r, false, true, w.op)
	if !posted {
		n, err = t.collDone(r, err, w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	}
	mb.sleep(true)
	defer mb.sleep(false)
	cur := t.view()
	cause := t.changeCause(cur, w)
	for cause == nil {
		if mb.ready(tag) {
			break
		}
		if cause = t.mailConflict(p, mb, tag, meta); cause != nil {
			break
		}
		select {
		case <-r.done:
			n, err = t.collDone(r, nil, w)
			return t.mailOr(p, mb, tag, meta, in, n, err)
		case <-mb.wake:
		case <-w.cancel:
			cause = w.ctx.Err()
		case <-cur.next:
			cur = t.view()
			cause = t.changeCause(cur, w)
		}
	}
	if cause != nil {
		n, err = t.collDone(r, t.withdraw(p, r, cause), w)
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
		n, err = t.collDone(r, nil, w)
		return t.mailOr(p, mb, tag, meta, in, n, err)
	}
	t.recycle(r)
	n, got, found, shut := mb.take(tag, in)
	switch {
	case found:
		n, err = mailResult(p.rank, tag, meta, n, got, in)
		return n, false, err
	case shut:
		return 0, false, t.mailClosed(p)
	}
	// Rewritten since it was seen: the neighbour gave the call up and went
	// on. The receive says so.
	n, err = t.recvCollInto(w.ctx, p.rank, tag, meta, in)
	return n, false, err
}

// mailOr ends an exchange whose posted receive ended with n and err
// (nil: a frame came for it, byFrame): a receive that failed gives way
// to the neighbour's part if it is in the mailbox by now, as a message
// that arrived wins over the neighbour's ABANDON that came after it, or
// over a give-up that found it already there.
func (t *NetTransport) mailOr(p *peer, mb *mailbox, tag, meta uint32, in []byte, n int, err error) (int, bool, error) {
	if err == nil {
		return n, true, nil
	}
	if m, got, found, _ := mb.take(tag, in); found {
		m, err = mailResult(p.rank, tag, meta, m, got, in)
		return m, false, err
	}
	return n, false, err
}

// mailConflict returns the error an exchange on tag expecting meta fails
// with because the neighbour's part of another step is in the mailbox,
// as the owner of the collective tags judges it (a frame for another step
// queued while a receive waits, CollOwner.Conflict), or nil.
func (t *NetTransport) mailConflict(p *peer, mb *mailbox, tag, meta uint32) error {
	o := t.collOwner()
	if o == nil {
		return nil
	}
	other, got, ok := mb.stray(tag)
	if !ok || mb.ready(tag) {
		// No other part; or the one waited for came too, written before
		// that other (the neighbour went on to its next step after taking
		// this rank's part), after the look that missed it.
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return o.Conflict(p.rank, tag, meta, other, got)
}

// collDone ends a collective receive r whose wait ended with err, as
// recvCollInto does.
func (t *NetTransport) collDone(r *recvReq, err error, w waitOpts) (int, error) {
	n, _, err := t.recvDone(r, err, w)
	return n, t.lossErr(collErr(err))
}

// wakeNeighbour sends p, a neighbour asleep on its mailbox, a WAKE.
func (t *NetTransport) wakeNeighbour(p *peer) {
	h := frame.Header{Kind: frame.KindWake, Src: uint32(t.rank)}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
}
