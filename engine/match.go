package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/match"
	"github.com/boltmesh/boltmesh/ioloop"
)

// matcher is a peer's matching state (internal/match), and the receive
// an eager payload is being read into: for each tag, the messages from
// the peer that arrived before anybody asked for them and the receives
// posted before their message arrived, each in order. The credit a
// queued message holds is released as a receive takes it (credit.go):
// the peer's flow-control window bounds what it can queue.
//
// Lock rule: the peer's mu guards every field (match.Matcher says which
// looks take none).
type matcher struct {
	match.Matcher[*recvReq]
	claimed *recvReq // receive whose buffer an eager payload is being read into
	freed   bool     // claimed's credit was used and released at once (sendPayload)
}

// match matches receive r from p with what has arrived, and reports
// whether r is now the transport's, posted or claimed, to complete later:
//
//	an eager message queued for r's tag  -> taken into r, its credit released (posted false)
//	an RTS queued for it                 -> r claimed for its DATA, the CTS sent (takeRTS)
//	nothing, the peer lost               -> its loss as an error of op
//	nothing, try                         -> errNotQueued
//	nothing, owned and the owner refuses -> its error (ownedPosting)
//	nothing                              -> r posted, and p's link read again if a
//	                                        deferred payload may be what r waits for
//
// A queued message longer than r's buffer fails r with a *TruncatedError
// and stays queued. r's own outcome (err, n, data, aux) is set when match
// returns with posted false and a nil error.
func (p *peer) match(r *recvReq, try, owned bool, op string) (posted bool, err error) {
	tag := uint32(r.tag)
	p.mu.Lock()
	q := p.m.Queue(tag)
	if m, ok := q.Msgs.Peek(); ok {
		if r.into && m.Size() > len(r.dst) {
			p.mu.Unlock()
			return false, r.truncated(m.Size())
		}
		if m.Buf == nil {
			p.takeRTS(q, tag, m, r) // unlocks
			return true, nil
		}
		p.m.TakeHead(q)
		p.m.Tidy(tag, q)
		p.mu.Unlock()
		p.freeCredit(m.Cost())
		r.fill(m.Buf, m.Aux)
		return false, nil
	}
	switch {
	case p.lost != nil:
		err = p.errFor(op)
	case try:
		err = errNotQueued
	case owned:
		err = p.ownedPosting(tag, r.meta)
	}
	if err != nil {
		p.m.Tidy(tag, q)
		p.mu.Unlock()
		return false, err
	}
	resume := p.m.PostRecv(q, r)
	p.mu.Unlock()
	if resume {
		p.link.resume()
	}
	return true, nil
}

// Deferred payloads. Where the control lane is a stream of its own (a
// full mesh, see meshLink), nothing on data stream 0 can be needed by
// anything but a receive: a large eager SEND that arrives before its
// receive may then stay in the socket until a receive from its sender is
// posted (ioloop.Conn.Defer), to be read straight into that receive's
// buffer instead of being read ahead into a pooled buffer and copied.

// deferMin is the payload size from which a SEND that no receive waits
// for is left in the data stream's socket until a receive from its
// sender is posted.
const deferMin = 32 << 10

// deferrable reports whether the eager SEND h on c, lane l of p's link,
// may wait in the socket for its receive: it is large, but not so large
// that the sender could not finish writing it while it waits
// (ioloop.Conn.DeferLimit: between neighbours, half the ring), on the
// data lane of a link whose control lane is a stream of its own. It asks
// the link, so p.mu must not be held.
func (p *peer) deferrable(c *ioloop.Conn, l lane, h *frame.Header) bool {
	return h.Length >= deferMin && l == laneData && h.Length <= c.DeferLimit() && p.link.ownCtl()
}

// maybeDefer defers a deferrable SEND (see deferrable) on c if nothing
// can want it or what is behind it yet: no receive from p is posted and
// no rendezvous message from p is coming in. p.mu is held.
func (p *peer) maybeDefer(c *ioloop.Conn, deferrable bool) {
	if !deferrable || p.m.Posted() > 0 || p.rdv.incoming() {
		return
	}
	p.m.Defer()
	c.Defer()
}

// sendPayload names where an eager SEND's payload goes: the first posted
// receive for its tag if it fits, else a pooled buffer (nil), unless it
// may wait in the socket for its receive (maybeDefer). It first uses cost
// of p's credit (none: the SEND's was used already) and drops p if it had
// not that much; a payload read straight into a receive has its credit
// released with the same lock (completeClaimed then releases none), a
// lock and an unlock fewer per message.
func (p *peer) sendPayload(c *ioloop.Conn, l lane, h *frame.Header, cost uint64) []byte {
	deferrable := p.deferrable(c, l, h) // before p.mu: it asks the link
	p.mu.Lock()
	q := p.m.Lookup(h.Tag)
	var r *recvReq
	if q != nil && q.Msgs.Len() == 0 {
		r, _ = q.Recvs.Peek()
	}
	claim := r != nil && h.Length > 0 && r.fits(int(h.Length))
	var grant uint64
	if cost > 0 {
		var err error
		if grant, err = p.in.Use(cost, claim); err != nil {
			p.mu.Unlock()
			p.noCredit(c, err)
			return nil
		}
	}
	var dst []byte
	switch {
	case r == nil:
		p.maybeDefer(c, deferrable)
	case claim:
		p.m.PopRecv(q)
		p.m.Tidy(h.Tag, q)
		r.state.Or(reqClaimed) // from reqPosted, keeping reqSpun
		r.aux = h.Aux
		p.m.claimed, p.m.freed = r, cost > 0
		if r.into {
			r.dst = r.dst[:h.Length]
			dst = r.dst
		} else {
			r.data = make([]byte, h.Length)
			dst = r.data
		}
	}
	// Otherwise nothing to read, or Deliver reports the truncation.
	p.mu.Unlock()
	p.noteGrant(grant)
	return dst
}

// completeClaimed completes the receive an eager payload of n bytes was
// read into, also if the peer was lost meanwhile: the message came whole.
func (p *peer) completeClaimed(n int) {
	p.mu.Lock()
	r, freed := p.m.claimed, p.m.freed
	p.m.claimed, p.m.freed = nil, false
	p.mu.Unlock()
	if !freed {
		p.freeInRead(frame.Cost(uint64(n)))
	}
	if r != nil { // (only the stream's end, readEnded, takes it otherwise)
		r.n = n
		r.complete(nil)
	}
}

// deliverSend matches an eager message held in bb with the first fitting
// posted receive, or queues it. Receives it does not fit fail with a
// *TruncatedError, leaving the message for later ones. The message's
// credit is released once a receive takes it. From this rank itself
// (sendSelf) nothing is credited.
func (p *peer) deliverSend(tag, aux uint32, bb *ioloop.Buffer) {
	cost := frame.Cost(uint64(len(bb.B)))
	p.mu.Lock()
	if p.unwanted(tag) {
		p.mu.Unlock()
		ioloop.PutBuffer(bb) // its owner no longer wants it: see lend.go
		p.freeInRead(cost)
		return
	}
	q := p.m.Queue(tag)
	if r := p.m.offer(q, len(bb.B)); r != nil {
		p.m.Tidy(tag, q)
		p.mu.Unlock()
		p.freeInRead(cost)
		r.take(bb, aux)
		return
	}
	if isOwnedTag(tag) {
		p.ownedQueued(tag, aux)
	}
	p.m.Hold(q, match.Msg{Buf: bb, Aux: aux})
	p.mu.Unlock()
}

// failRecvs fails every posted receive with the peer's loss; messages
// that arrived whole stay receivable. The claimed receive is left to the
// end of the read into its buffer (fill.go). p.mu is held and p.lost set.
func (p *peer) failRecvs() {
	for tag, q := range p.m.All() {
		for {
			r, ok := p.m.PopRecv(q)
			if !ok {
				break
			}
			r.complete(p.errFor("recv"))
		}
		p.m.Tidy(tag, q)
	}
}

// withdraw takes back r, posted for its tag, if it is still waiting
// there (not claimed by a payload being read in), and reports whether it
// did.
func (m *matcher) withdraw(r *recvReq) bool {
	tag := uint32(r.tag)
	q := m.Lookup(tag)
	if r.state.Load()&^reqSpun != reqPosted || q == nil || !m.RemoveRecv(q, r) {
		return false
	}
	m.Tidy(tag, q)
	return true
}

// offer hands a message of n bytes that arrived for q's tag to the first
// posted receive it fits, and returns it (popped), or nil: receives it
// does not fit fail with a *TruncatedError, and the message is for later
// ones.
func (m *matcher) offer(q *match.Queue[*recvReq], n int) *recvReq {
	for {
		r, ok := m.PopRecv(q)
		if !ok {
			return nil
		}
		if r.fits(n) {
			return r
		}
		r.complete(r.truncated(n))
	}
}

// failWaiting fails receives waiting on the tags in (in no order of the
// tags, in posting order per tag): for each tag, errFor is asked of its
// receives from the first, which fail with the error it returns, until it
// returns nil or one is not on the owned range.
func (m *matcher) failWaiting(in func(u uint32) bool, errFor func(u uint32, r *recvReq) error) {
	// From the last: a queue emptied here leaves waiting by a swap with
	// the last, one already looked at.
	for i := len(m.Waiting()) - 1; i >= 0; i-- {
		q := m.Waiting()[i]
		u := q.Tag
		if !in(u) {
			continue
		}
		for {
			r, ok := q.Recvs.Peek()
			if !ok || !r.owned {
				break
			}
			err := errFor(u, r)
			if err == nil {
				break
			}
			m.PopRecv(q)
			r.complete(err)
		}
		m.Tidy(u, q)
	}
}

// onSendHeader is SEND's payload row (kinds.go): its credit used, unless
// it was used when the payload was deferred, and where it goes.
func (p *peer) onSendHeader(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	cost := frame.Cost(h.Length)
	if p.m.ChargedDeferred() {
		cost = 0 // used when the payload was deferred
	}
	return p.sendPayload(c, l, h, cost)
}

// onSend is SEND's arrive row (kinds.go): a receive whose buffer it was
// read into completes, or it is held for one.
func (p *peer) onSend(_ *ioloop.Conn, _ lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	if bb == nil {
		p.completeClaimed(len(payload))
		return
	}
	p.deliverSend(h.Tag, h.Aux, bb)
}
