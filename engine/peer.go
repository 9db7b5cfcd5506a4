package engine

import (
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
)

// tagQueue holds, for one (source, tag), either messages that arrived before
// anybody asked for them or receives posted before their message arrived.
type tagQueue struct {
	msgs  fifo[queuedMsg]
	recvs fifo[*recvReq]
}

// queuedMsg is a message that arrived before its receive: an eager one's
// payload, or a rendezvous one's announcement (RTS), and its header's Aux
// (the collectives' call meta).
type queuedMsg struct {
	bb  *bytebufferpool.ByteBuffer // an eager message's payload; nil for an RTS
	aux uint32
	id  uint64 // RTS: the send id
	n   uint64 // RTS: the message's length
}

// size returns the message's length.
func (m queuedMsg) size() int {
	if m.bb != nil {
		return len(m.bb.B)
	}
	return int(m.n)
}

// cost returns the flow-control credit the message holds.
func (m queuedMsg) cost() uint64 {
	if m.bb != nil {
		return frame.Cost(uint64(len(m.bb.B)))
	}
	return frame.Cost(0)
}

// peer is this rank's view of one other rank (or of itself, with no
// link): the matching state for messages from it, the one-sided and
// rendezvous state, and its flow-control credit in both directions. Its
// link (link.go) moves its frames and hands each arrival to payload and
// arrive, with the lane it came on.
//
// Lock rule: mu guards the matching state (tags, freeQ, claimed, lost,
// posted, deferred), the one-sided state (gets, claimedGet, putErr) and the
// rendezvous state (rdvIn, rdvOut, maxRTS, tombs). Whoever completes a
// request does so after taking it out of these under mu. mu is never held
// while calling into the link, but for Defer and Discard from inside
// payload: a send that fails calls the handlers, which take mu. The credit
// has its own locks (credit.go); the atomics need none.
type peer struct {
	t    *NetTransport
	rank int

	mu      sync.Mutex
	tags    map[uint32]*tagQueue
	freeQ   []*tagQueue // emptied queues, for reuse
	claimed *recvReq    // receive whose buffer an eager payload is being read into
	lost    *PeerError  // why the peer is gone, once it is

	abandoned []abandonNote // the collective calls the peer gave up, by index in the tag space (abandon.go)

	gets       map[uint64]*getReq // gets waiting for their reply, by id
	claimedGet *getReq            // get whose reply is being read into its buffer
	putErr     error              // first put refusal since the last Quiet
	putSeq     atomic.Uint64      // puts sent to this peer
	fenced     atomic.Uint64      // puts known complete at the peer
	released   chan struct{}      // closed when the connection is released

	rdvIn  map[uint64]*recvReq    // receives waiting for a rendezvous message's DATA, by send id
	rdvOut map[uint64]*rdvSend    // rendezvous sends waiting for their CTS, by send id
	rts    [2][frame.RTSSize]byte // an RTS payload being read: on the data, on the control stream
	maxRTS uint64                 // the highest send id of an RTS from the peer (ids grow on the wire)
	rtsMu  sync.Mutex             // held while an RTS to the peer takes its id and is queued; never with mu
	tombs  tombs                  // RTSs withdrawn before they came (tombs.go)

	rpcCost uint64 // the credit of the RPC request being read
	rpcDrop bool   // the RPC frame being read is discarded (plumb.RPCFrame.Dropped)

	in  inCredit  // the credit granted to the peer
	out outCredit // the credit the peer granted this rank

	goodbye     atomic.Bool   // the peer announced an orderly close
	goodbyeDone atomic.Uint64 // barriers it had completed then
	goodbyeColl atomic.Uint32 // and the last collective call it completed
	goodbyeLost atomic.Int32  // and the first rank it knew lost, or -1 (loss.go)
	byeAnswered chan struct{} // closed when it answered this rank's GOODBYE, or was lost (goodbye.go)
	byeOnce     sync.Once

	link link // what moves the peer's frames (link.go); nil for this rank itself

	windowOpen bool        // the first CREDIT went out; guarded by mu
	posted     int         // receives posted in the tags' recvs queues; guarded by mu
	deferred   bool        // a payload on conn waits in the socket for a receive; guarded by mu
	charged    atomic.Bool // the deferred SEND's credit is used (the data stream's reader's)
}

func newPeer(t *NetTransport, rank int) *peer {
	p := &peer{t: t, rank: rank, tags: make(map[uint32]*tagQueue), gets: make(map[uint64]*getReq), released: make(chan struct{}), byeAnswered: make(chan struct{})}
	p.rdvIn, p.rdvOut = make(map[uint64]*recvReq), make(map[uint64]*rdvSend)
	p.in.window = uint64(t.opts.MaxQueuedBytes)
	p.out.init()
	return p
}

func (p *peer) queue(tag uint32) *tagQueue {
	q := p.tags[tag]
	if q == nil {
		if n := len(p.freeQ); n > 0 {
			q, p.freeQ = p.freeQ[n-1], p.freeQ[:n-1]
		} else {
			q = &tagQueue{}
		}
		p.tags[tag] = q
	}
	return q
}

// postRecv queues r for tag's next message, and reports whether the data
// stream must be read again: what r waits for may be behind a deferred
// payload. p.mu is held.
func (p *peer) postRecv(q *tagQueue, r *recvReq) bool {
	q.recvs.push(r)
	p.posted++
	return p.undefer()
}

// popRecv takes the first receive posted in q. p.mu is held.
func (p *peer) popRecv(q *tagQueue) (*recvReq, bool) {
	r, ok := q.recvs.pop()
	if ok {
		p.posted--
	}
	return r, ok
}

// removeRecv takes r back from q, if it is there. p.mu is held.
func (p *peer) removeRecv(q *tagQueue, r *recvReq) bool {
	if !q.recvs.remove(r) {
		return false
	}
	p.posted--
	return true
}

// tidy drops tag's queue once it holds nothing and keeps it for reuse, so
// that tags used once (collectives take fresh tags per call) neither pile
// up nor cost an allocation each; a queue kept for reuse keeps at most a
// little storage. p.mu must be held.
func (p *peer) tidy(tag uint32, q *tagQueue) {
	if q.msgs.len() == 0 && q.recvs.len() == 0 {
		delete(p.tags, tag)
		if len(p.freeQ) < 64 {
			q.msgs.trim(64)
			q.recvs.trim(64)
			p.freeQ = append(p.freeQ, q)
		}
	}
}

// payload is the matcher's part of ioloop.Handler.Payload for a frame
// that came on lane l of p's link (which checked that the lane carries
// its kind): it accounts the credit of a credited frame and names where
// the payload goes. An eager SEND whose receive is posted is read
// straight into the receiver's buffer; one that nobody waits for, into a
// pooled buffer (held within the peer's credit). A payload that will be
// refused (a PUT outside the heap, a reply nobody waits for) is discarded
// as it is read.
func (p *peer) payload(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	switch h.Kind {
	case frame.KindSend:
		if isAbandon(h) {
			return nil
		}
		if !p.chargedDeferred() && !p.useCredit(c, frame.Cost(h.Length)) {
			return nil
		}
		return p.sendPayload(c, l, h)
	case frame.KindRTS:
		// A withdrawal uses credit on the control lane (see withdrawRTS).
		credited := h.Flags&frame.FlagError == 0 || l == laneCtl
		if credited && !p.useCredit(c, frame.Cost(0)) {
			return nil
		}
		return p.rtsBuf(l)
	case frame.KindData:
		return p.dataPayload(c, h)
	case frame.KindPut:
		s, _, _ := p.heapRange(h.Offset, h.Length)
		if s == nil {
			c.Discard() // refused: Deliver answers
		}
		return s
	case frame.KindGetReply:
		return p.claimGet(c, h)
	case frame.KindRPCReq, frame.KindRPCReply:
		return p.rpcPayload(c, h)
	}
	return nil
}

// sendPayload names where an eager SEND's payload goes: the first posted
// receive for its tag if it fits, else a pooled buffer (nil), unless it
// may wait in the socket for its receive (maybeDefer).
func (p *peer) sendPayload(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.tags[h.Tag]
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
	p.popRecv(q)
	p.tidy(h.Tag, q)
	r.state.Store(reqClaimed)
	r.aux = h.Aux
	p.claimed = r
	if r.into {
		r.dst = r.dst[:h.Length]
		return r.dst
	}
	r.data = make([]byte, h.Length)
	return r.data
}

// arrive is the matcher's part of ioloop.Handler.Deliver for a frame
// that came whole on lane l of p's link: one handler per frame kind.
func (p *peer) arrive(c *ioloop.Conn, l lane, h *frame.Header, payload []byte, bb *bytebufferpool.ByteBuffer) {
	switch h.Kind {
	case frame.KindSend:
		switch {
		case isAbandon(h):
			p.mu.Lock()
			p.abandon(h.Tag, h.Offset)
			p.mu.Unlock()
			putBuffer(bb)
		case bb == nil:
			p.completeClaimed(len(payload))
		default:
			p.deliverSend(h.Tag, h.Aux, bb)
		}
	case frame.KindRTS:
		p.deliverRTS(c, l, h, bb)
	case frame.KindCTS:
		putBuffer(bb)
		p.deliverCTS(c, h)
	case frame.KindData:
		putBuffer(bb)
		p.dataDone(h)
	case frame.KindCredit:
		putBuffer(bb)
		p.out.grant(h.Offset)
	case frame.KindPut:
		p.deliverPut(c, h, bb)
	case frame.KindPutAck:
		p.notePutErr(h, bb)
	case frame.KindGetReq:
		p.serveGet(c, h, bb)
	case frame.KindGetReply:
		p.deliverGetReply(h, bb)
	case frame.KindRPCReq, frame.KindRPCReply:
		p.deliverRPC(h, bb)
	case frame.KindHeartbeat:
		putBuffer(bb)
	case frame.KindGoodbye:
		p.deliverGoodbye(c, h)
		putBuffer(bb)
	default:
		putBuffer(bb)
		p.t.opts.Logger.Warn("boltmesh: dropped frame of unsupported kind", "rank", p.rank, "kind", h.Kind)
	}
}

// putBuffer returns bb to the pool, if there is one.
func putBuffer(bb *bytebufferpool.ByteBuffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}

// isAbandon reports whether h is a collective abandon (see abandon.go),
// which uses no credit and is never queued.
func isAbandon(h *frame.Header) bool {
	return h.Aux == collAbandonAux && h.Length == 0 && isCollTag(h.Tag)
}

func (p *peer) completeClaimed(n int) {
	p.mu.Lock()
	r := p.claimed
	p.claimed = nil
	p.mu.Unlock()
	p.freeCredit(frame.Cost(uint64(n)))
	r.n = n
	r.complete(nil)
}

// deliverSend matches an eager message held in bb with the first fitting
// posted receive, or queues it. Receives it does not fit fail with a
// *TruncatedError, leaving the message for later ones. The message's
// credit is released once a receive takes it. From this rank itself
// (sendSelf) nothing is credited.
func (p *peer) deliverSend(tag, aux uint32, bb *bytebufferpool.ByteBuffer) {
	cost := frame.Cost(uint64(len(bb.B)))
	p.mu.Lock()
	if isCollTag(tag) && pastCall(p.t.collCall.Load(), tag) {
		p.mu.Unlock()
		ioloop.PutBuffer(bb) // its call is over here: see stale.go
		p.freeCredit(cost)
		return
	}
	q := p.queue(tag)
	for {
		r, ok := p.popRecv(q)
		if !ok {
			break
		}
		if r.fits(len(bb.B)) {
			p.tidy(tag, q)
			p.mu.Unlock()
			p.freeCredit(cost)
			r.take(bb, aux)
			return
		}
		r.complete(r.truncated(len(bb.B)))
	}
	if isCollTag(tag) {
		p.collStep(tag, aux)
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
	case p.goodbye.Load():
		// Noted first, so that the errors of the receives failed next name
		// the loss its GOODBYE reported (loss.go).
		p.t.noteClosed(p.rank, p.goodbyeDone.Load(), p.goodbyeColl.Load(), int(p.goodbyeLost.Load()))
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
	if r := p.claimed; r != nil {
		p.claimed = nil
		r.complete(p.errFor("recv"))
	}
	for tag, q := range p.tags {
		for {
			r, ok := p.popRecv(q)
			if !ok {
				break
			}
			r.complete(p.errFor("recv"))
		}
		p.tidy(tag, q)
	}
	p.failRdv()
	p.tombs = nil
	if g := p.claimedGet; g != nil {
		p.claimedGet = nil
		g.complete(p.errFor("get"))
	}
	for id, g := range p.gets {
		delete(p.gets, id)
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
