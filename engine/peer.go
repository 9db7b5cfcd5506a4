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

// queuedMsg is a message that arrived before its receive: the payload and
// its header's Aux (the collectives' call meta).
type queuedMsg struct {
	bb  *bytebufferpool.ByteBuffer
	aux uint32
}

// peer is this rank's view of one other rank (or of itself, with no
// connection): the matching state for messages from it, and the
// connection's ioloop.Handler.
type peer struct {
	t    *NetTransport
	rank int
	conn *ioloop.Conn // nil for this rank itself

	mu       sync.Mutex
	tags     map[uint32]*tagQueue
	freeQ    []*tagQueue // emptied queues, for reuse
	claimed  *recvReq    // receive whose buffer a payload is being read into
	lost     *PeerError  // why the peer is gone, once it is
	queued   int64       // bytes in msgs queues
	paused   bool        // reading stopped for backpressure
	waiting  int         // receives posted in recvs queues
	deferred bool        // a large payload waits in the socket for a receive

	abandoned     bool   // the peer gave up a collective call (see abandon)
	abandonedCall uint32 // that call's index in the tag space
	abandonedAt   uint32 // this rank's collective call when it heard

	gets       map[uint64]*getReq // gets waiting for their reply, by id
	claimedGet *getReq            // get whose reply is being read into its buffer
	putErr     error              // first put refusal since the last Quiet
	putSeq     atomic.Uint64      // puts sent to this peer
	fenced     atomic.Uint64      // puts known complete at the peer
	released   chan struct{}      // closed when the connection is released

	goodbye     atomic.Bool   // the peer announced an orderly close
	goodbyeDone atomic.Uint64 // barriers it had completed then
	goodbyeColl atomic.Uint32 // and the last collective call it completed

	via    uint16     // star worker: Dst of frames to this peer (rank+1) when routed; else 0
	shared *starLink  // star worker: the coordinator connection all peers share; else nil
	fwd    fwdCounter // star coordinator: bytes from this worker being forwarded
	live   liveness   // heartbeat bookkeeping of the connection

	streams        []*ioloop.Conn // the pair's connections; streams[0] is conn
	stripeMu       sync.Mutex     // held while a striped message is queued
	striped        []*striped     // striped messages being received, in order
	head           *striped       // the one whose head is being read
	stripeDeferred uint32         // streams holding a piece whose head has not come
}

var _ ioloop.Handler = (*peer)(nil)

func newPeer(t *NetTransport, rank int) *peer {
	p := &peer{t: t, rank: rank, tags: make(map[uint32]*tagQueue), gets: make(map[uint64]*getReq), released: make(chan struct{})}
	p.streams = make([]*ioloop.Conn, t.opts.Streams)
	p.fwd.done = p.forwarded
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

// tidy drops tag's queue once it holds nothing and keeps it for reuse, so
// that tags used once (collectives take fresh tags per call) neither pile
// up nor cost an allocation each. p.mu must be held.
func (p *peer) tidy(tag uint32, q *tagQueue) {
	if q.msgs.len() == 0 && q.recvs.len() == 0 {
		delete(p.tags, tag)
		if len(p.freeQ) < 64 {
			p.freeQ = append(p.freeQ, q)
		}
	}
}

// deferMin is the payload size from which a SEND that nobody waits for is
// left in the socket (ioloop.Conn.Defer) until a receive from its sender is
// posted, instead of being read ahead into a pooled buffer and copied.
const deferMin = 32 << 10

// Payload implements ioloop.Handler: a SEND whose receive is already posted
// is read straight into the receiver's buffer. A large SEND that no receive
// waits for is deferred while nothing at all waits on this peer; once a
// receive from the peer is posted, for any tag, it is read (into a pooled
// buffer if the tag differs), so a deferred frame never blocks what is
// behind it for longer than the application takes to ask.
func (p *peer) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if h.Dst != 0 {
		return nil // to be forwarded: read into a pooled buffer
	}
	if h.Kind == frame.KindSend && h.Flags&frame.FlagMore != 0 {
		return p.headPayload(c, h)
	}
	switch h.Kind {
	case frame.KindPut:
		s, _, _ := p.heapRange(h.Offset, h.Length)
		return s // straight into the heap; nil: refused, Deliver answers
	case frame.KindGetReply:
		return p.claimGet(h)
	case frame.KindSend:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.tags[h.Tag]
	if q != nil && q.msgs.len() > 0 {
		return nil
	}
	var r *recvReq
	if q != nil {
		r, _ = q.recvs.peek()
	}
	if r == nil && p.waiting == 0 && h.Length >= deferMin && p.shared == nil {
		p.deferred = true
		c.Defer()
		return nil
	}
	if r == nil || h.Length == 0 || !r.fits(int(h.Length)) {
		return nil // no receiver, nothing to read, or Deliver reports the truncation
	}
	q.recvs.pop()
	p.tidy(h.Tag, q)
	p.waiting--
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

// Deliver implements ioloop.Handler.
func (p *peer) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *bytebufferpool.ByteBuffer) {
	if h.Dst != 0 {
		p.forward(c, h, bb)
		return
	}
	switch h.Kind {
	case frame.KindSend:
		if h.Flags&frame.FlagMore != 0 {
			p.headDone(c, h, bb)
			return
		}
		if bb == nil {
			p.completeClaimed(len(payload))
			return
		}
		p.deliver(c, h.Tag, h.Aux, bb)
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
		if bb != nil {
			ioloop.PutBuffer(bb)
		}
	case frame.KindGoodbye:
		p.goodbyeDone.Store(h.Offset)
		p.goodbyeColl.Store(h.Aux)
		p.goodbye.Store(true)
		if bb != nil {
			ioloop.PutBuffer(bb)
		}
	default:
		if bb != nil {
			ioloop.PutBuffer(bb)
		}
		p.t.opts.Logger.Warn("boltmesh: dropped frame of unsupported kind", "rank", p.rank, "kind", h.Kind)
	}
}

func (p *peer) completeClaimed(n int) {
	p.mu.Lock()
	r := p.claimed
	p.claimed = nil
	p.mu.Unlock()
	r.n = n
	r.complete(nil)
}

// deliver matches a message held in bb with the first fitting posted
// receive, or queues it. Receives it does not fit fail with a
// *TruncatedError, leaving the message for later ones.
func (p *peer) deliver(c *ioloop.Conn, tag, aux uint32, bb *bytebufferpool.ByteBuffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if aux == collAbandonAux && isCollTag(tag) {
		p.abandon(tag)
		ioloop.PutBuffer(bb)
		return
	}
	if isCollTag(tag) && pastCall(p.t.collCall.Load(), tag) {
		ioloop.PutBuffer(bb) // its call is over here: see stale.go
		return
	}
	q := p.queue(tag)
	for {
		r, ok := q.recvs.pop()
		if !ok {
			break
		}
		p.waiting--
		if r.fits(len(bb.B)) {
			r.take(bb, aux)
			p.tidy(tag, q)
			return
		}
		r.complete(r.truncated(len(bb.B)))
	}
	if isCollTag(tag) {
		p.collStep(tag, aux)
	}
	q.msgs.push(queuedMsg{bb, aux})
	p.queued += int64(len(bb.B))
	if c != nil && p.waiting == 0 && p.queued > p.t.opts.MaxQueuedBytes && p.pause() {
		c.Pause()
	}
}

// Closed implements ioloop.Handler: the peer is lost (or the transport
// closed), and every receive waiting on it fails. A peer that said GOODBYE
// first closed in order: operations with it fail, but operations that
// need every rank (barriers) are not aborted, since the peer finished its
// part of them before closing.
func (p *peer) Closed(_ *ioloop.Conn, err error) {
	defer close(p.released)
	p.closeStripes()
	p.lose(err)
}

// lose fails every operation with p: the connection to it broke with err
// or, in a star, the coordinator reported it gone. It may run more than
// once; the first cause stays.
func (p *peer) lose(err error) {
	defer p.t.announceGone(p)
	defer p.rpcPeerLost()
	switch {
	case p.t.closed.Load():
		p.fail(ErrClosed, nil)
	case p.goodbye.Load():
		p.fail(ErrPeerLost, ErrPeerClosed)
		p.t.noteClosed(p.rank, p.goodbyeDone.Load(), p.goodbyeColl.Load())
	default:
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
	if r := p.claimed; r != nil {
		p.claimed = nil
		r.complete(p.errFor("recv"))
	}
	for tag, q := range p.tags {
		for {
			r, ok := q.recvs.pop()
			if !ok {
				break
			}
			p.waiting--
			r.complete(p.errFor("recv"))
		}
		p.tidy(tag, q)
	}
	p.failStriped()
	if g := p.claimedGet; g != nil {
		p.claimedGet = nil
		g.complete(p.errFor("get"))
	}
	for id, g := range p.gets {
		delete(p.gets, id)
		p.waiting--
		g.complete(p.errFor("get"))
	}
}

// await counts a new waiter on p and reports whether reading must resume:
// a waiter overrides the backpressure pause and a deferred payload, since
// what it waits for may be behind them. p.mu must be held.
func (p *peer) await() bool {
	p.waiting++
	resume := p.unpause() || p.deferred
	p.deferred = false
	return resume && !p.holding()
}

// holding reports whether stream 0 is paused until a striped message
// nobody waited for is whole; its completion resumes it. p.mu must be held.
func (p *peer) holding() bool {
	for _, m := range p.striped {
		if m.held {
			return true
		}
	}
	return false
}

// pause records a backpressure pause of p's connection and reports
// whether the caller must pause it (it was not paused already). A star
// worker's peers share one connection, and so one pause. p.mu must be held.
func (p *peer) pause() bool {
	if p.shared != nil {
		return !p.shared.paused.Swap(true)
	}
	was := p.paused
	p.paused = true
	return !was
}

// unpause clears the pause and reports whether there was one, so that the
// caller resumes the connection. p.mu must be held.
func (p *peer) unpause() bool {
	if p.shared != nil {
		return p.shared.paused.Swap(false)
	}
	was := p.paused
	p.paused = false
	return was
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
