package engine

import (
	"sync"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// peer is this rank's view of one other rank (or of itself, with no
// link), made of components, each with its state, its lock rule and its
// file:
//
//	link   link.go, link_*.go  moves the peer's frames; hands arrivals to payload and arrive
//	m      match.go            posted receives and queued messages, FIFO per tag
//	rdv    rendezvous.go       large messages announced (RTS), answered (CTS), sent (DATA)
//	one    peer_heap.go        one-sided operations: gets by id, the put fence
//	in/out credit.go           flow-control credit granted to the peer, and by it
//	rpcIn  rpc.go              the RPC frame being read
//	bye    goodbye.go          the peer's orderly close
//
// Lock rule: mu guards m, rdv, one (but for its atomics), lost and
// windowOpen: the matcher, rendezvous and one-sided state move
// together (a posted receive may be waiting for a rendezvous, or for a
// deferred payload), so they share it. Whoever completes a request does so
// after taking it out of them under mu. mu is never held while calling
// into the link, but for Defer and Discard from inside payload: a send
// that fails calls the handlers, which take mu. The credit has its own
// locks; rpcIn belongs to the reader of the link's control lane; bye and
// the atomics need none.
type peer struct {
	t    *NetTransport
	rank int
	link link // nil for this rank itself

	mu   sync.Mutex
	m    matcher
	rdv  rdvState
	one  oneSided
	lost *PeerError // why the peer is gone, once it is

	in    inCredit  // the credit granted to the peer
	out   outCredit // the credit the peer granted this rank
	rpcIn rpcIn
	bye   farewell

	windowOpen bool          // the first CREDIT went out
	released   chan struct{} // closed when the link is released
}

func newPeer(t *NetTransport, rank int) *peer {
	p := &peer{t: t, rank: rank, released: make(chan struct{})}
	p.m.init()
	p.rdv.init()
	p.one.init()
	p.bye.init()
	p.in.window = uint64(t.opts.MaxQueuedBytes)
	p.out.init()
	return p
}

// sendPayload names where an eager SEND's payload goes: the first posted
// receive for its tag if it fits, else a pooled buffer (nil), unless it
// may wait in the socket for its receive (maybeDefer).
func (p *peer) sendPayload(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.m.tags[h.Tag]
	var r *recvReq
	if q != nil && q.msgs.len() == 0 {
		r, _ = q.recvs.peek()
	}
	if r == nil {
		p.maybeDefer(c, l, h)
		return nil
	}
	if h.Length == 0 || !r.fits(int(h.Length)) {
		return nil // nothing to read, or Deliver reports the truncation
	}
	p.m.popRecv(q)
	p.m.tidy(h.Tag, q)
	r.state.Store(reqClaimed)
	r.aux = h.Aux
	p.m.claimed = r
	if r.into {
		r.dst = r.dst[:h.Length]
		return r.dst
	}
	r.data = make([]byte, h.Length)
	return r.data
}

// putBuffer returns bb to the pool, if there is one.
func putBuffer(bb *ioloop.Buffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}

// completeClaimed completes the receive an eager payload of n bytes was
// read into, unless the peer's loss or the transport's close failed it
// meanwhile (fail): then its payload is dropped.
func (p *peer) completeClaimed(n int) {
	p.mu.Lock()
	r := p.m.claimed
	p.m.claimed = nil
	p.mu.Unlock()
	p.freeCredit(frame.Cost(uint64(n)))
	if r == nil {
		return
	}
	r.n = n
	r.complete(nil)
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
		ioloop.PutBuffer(bb) // its owner no longer wants it: see coll_owner.go
		p.freeCredit(cost)
		return
	}
	q := p.m.queue(tag)
	for {
		r, ok := p.m.popRecv(q)
		if !ok {
			break
		}
		if r.fits(len(bb.B)) {
			p.m.tidy(tag, q)
			p.mu.Unlock()
			p.freeCredit(cost)
			r.take(bb, aux)
			return
		}
		r.complete(r.truncated(len(bb.B)))
	}
	if isCollTag(tag) {
		p.collQueued(tag, aux)
	}
	q.msgs.push(queuedMsg{bb: bb, aux: aux})
	p.mu.Unlock()
}

// closed is the end of p's link, which reports it: the peer is lost (or
// the transport closed), and every receive waiting on it fails. A peer that said GOODBYE
// first closed in order: operations with it fail, but operations that
// need every rank (barriers) are not aborted, since the peer finished its
// part of them before closing.
func (p *peer) closed(err error) {

	defer close(p.released)
	if p.link != nil {
		p.link.close()
	}
	p.lose(err)
}

// lose fails every operation with p: the connection to it broke with err
// or, in a star, the coordinator reported it gone. It may run more than
// once; the first cause stays.
func (p *peer) lose(err error) {
	defer p.t.announceGone(p)
	defer p.rpcPeerLost()
	defer p.byeAnswer()
	switch {
	case p.t.closed.Load():
		p.fail(ErrClosed, nil)
	case p.bye.said.Load():
		// Noted first, so that the errors of the receives failed next name
		// the loss its GOODBYE reported (loss.go).
		p.t.noteClosed(p.rank, p.bye.done.Load(), p.bye.coll.Load(), int(p.bye.lost.Load()))
		p.fail(ErrPeerLost, ErrPeerClosed)
	default:
		p.t.noteLoss(p.rank, err) // first, as noteClosed above
		p.fail(ErrPeerLost, err)
		p.t.noteLost(p.rank)
	}
}

// fail marks the peer gone and fails the claimed and every posted receive.
// Messages that arrived whole stay receivable.
func (p *peer) fail(sentinel, cause error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost == nil {
		p.lost = &PeerError{Rank: p.rank, Err: sentinel, Cause: cause}
	}
	p.out.fail()
	if r := p.m.claimed; r != nil {
		p.m.claimed = nil
		r.complete(p.errFor("recv"))
	}
	for tag, q := range p.m.tags {
		for {
			r, ok := p.m.popRecv(q)
			if !ok {
				break
			}
			r.complete(p.errFor("recv"))
		}
		p.m.tidy(tag, q)
	}
	p.failRdv()
	p.rdv.tombs = nil
	if g := p.one.claimed; g != nil {
		p.one.claimed = nil
		g.complete(p.errFor("get"))
	}
	for id, g := range p.one.gets {
		delete(p.one.gets, id)
		g.complete(p.errFor("get"))
	}
}

// errFor returns the peer's loss as an error of operation op; p.lost must
// be set and p.mu held (or the peer known to be lost).
func (p *peer) errFor(op string) error {
	e := *p.lost
	e.Op = op
	return &e
}

// lostErr returns the peer's loss as an error of op, or nil.
func (p *peer) lostErr(op string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost == nil {
		return nil
	}
	return p.errFor(op)
}
