package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Refusal codes carried in the Aux field of PUT_ACK and GET_REPLY frames
// with the Error flag.
const (
	codeOutOfBounds = 1 // the range is outside the target's heap
	codeNoHeap      = 2 // the target's heap is closed
)

func codeErr(code uint32) error {
	if code == codeOutOfBounds {
		return ErrOutOfBounds
	}
	return ErrClosed
}

// oneSided is a peer's one-sided state: the gets waiting for its
// replies, and the fence of the puts sent to it (Quiet).
//
// Lock rule: the peer's mu guards gets, claimed and putErr; putSeq,
// fenced are atomics.
type oneSided struct {
	gets    map[uint64]*getReq // gets waiting for their reply, by id
	claimed *getReq            // get whose reply is being read into its buffer
	putErr  error              // first put refusal since the last Quiet
	putSeq  atomic.Uint64      // puts sent to this peer
	fenced  atomic.Uint64      // puts known complete at the peer
}

func (o *oneSided) init() { o.gets = make(map[uint64]*getReq) }

// putSent counts a put sent to the peer.
func (o *oneSided) putSent() { o.putSeq.Add(1) }

// fence returns the number of puts sent so far, and whether a completed
// fence covers them all already.
func (o *oneSided) fence() (target uint64, fenced bool) {
	target = o.putSeq.Load()
	return target, o.fenced.Load() >= target
}

// heapRange returns the target range of a PUT or GET, or why it is refused.
func (p *peer) heapRange(off, n uint64) ([]byte, uint32, string) {
	s, err := p.t.heap.Slice(off, n)
	if err == nil {
		return s, 0, ""
	}
	if p.t.closed.Load() {
		return nil, codeNoHeap, "heap closed"
	}
	return nil, codeOutOfBounds, fmt.Sprintf("%d bytes at offset %d are outside the heap of %d bytes", n, off, p.t.heap.Size())
}

// addGet registers g as waiting for a reply from p.
func (p *peer) addGet(g *getReq) error {
	p.mu.Lock()
	if p.lost != nil {
		err := p.errFor("get")
		p.mu.Unlock()
		return err
	}
	p.one.gets[g.id] = g
	p.mu.Unlock()
	return nil
}

// removeGet takes g back if its reply has not started; p.mu not held.
func (p *peer) removeGet(g *getReq) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.one.gets[g.id] != g || g.state.Load() != reqPosted {
		return false
	}
	delete(p.one.gets, g.id)
	return true
}

// claimGet takes the get a GET reply answers (p.one.claimed, for Deliver)
// and names where the reply goes: the get's own buffer when it carries
// data of the expected length, a pooled buffer for a short refusal
// reason, and nowhere (discarded) for a reply nobody waits for or one that
// cannot be right.
func (p *peer) claimGet(c *ioloop.Conn, h *frame.Header) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.one.gets[h.Offset]
	if g != nil {
		delete(p.one.gets, h.Offset)
		g.state.Store(reqClaimed)
		p.one.claimed = g
	}
	switch {
	case g != nil && h.Flags&frame.FlagError != 0 && h.Length <= frame.MaxReasonSize:
		return nil
	case g != nil && h.Flags&frame.FlagError == 0 && uint64(len(g.dst)) == h.Length:
		return g.dst
	}
	if h.Length > 0 {
		c.Discard()
	}
	return nil
}

// deliverPut finishes a PUT; one refused (discarded, not read into the
// heap) is answered with a PUT_ACK carrying the reason.
func (p *peer) deliverPut(c *ioloop.Conn, h *frame.Header, bb *ioloop.Buffer) {
	putBuffer(bb)
	if _, code, why := p.heapRange(h.Offset, h.Length); code != 0 {
		ack := frame.Header{Kind: frame.KindPutAck, Flags: frame.FlagError, Src: uint32(p.t.rank), Aux: code, Offset: h.Offset}
		p.link.post(laneCtl, ack, []byte(why), true)
	}
}

// notePutErr records a put refusal for the next Quiet.
func (p *peer) notePutErr(h *frame.Header, bb *ioloop.Buffer) {
	err := &RemoteError{Op: "put", Rank: p.rank, Reason: string(bb.B), Err: codeErr(h.Aux)}
	ioloop.PutBuffer(bb)
	p.mu.Lock()
	if p.one.putErr == nil {
		p.one.putErr = err
	}
	p.mu.Unlock()
}

// fenceDone records that every put up to seq is complete at p.
func (p *peer) fenceDone(seq uint64) {
	for {
		cur := p.one.fenced.Load()
		if cur >= seq || p.one.fenced.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// takePutErr returns and clears the first refusal since the last call.
func (p *peer) takePutErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.one.putErr
	p.one.putErr = nil
	return err
}

// serveGet answers a GET request with the heap range, sent from the heap
// itself without blocking the reader.
func (p *peer) serveGet(c *ioloop.Conn, h *frame.Header, bb *ioloop.Buffer) {
	req, err := frame.DecodeGetReq(bb.B)
	ioloop.PutBuffer(bb)
	if err != nil {
		p.violation(c, err)
		return
	}
	reply := frame.Header{Kind: frame.KindGetReply, Src: uint32(p.t.rank), Offset: req.ID}
	s, code, why := p.heapRange(h.Offset, req.Length)
	if code == 0 && req.Length > p.t.opts.MaxFrame {
		s, code, why = nil, codeOutOfBounds, fmt.Sprintf("a get of %d bytes is longer than a frame may be (%d)", req.Length, p.t.opts.MaxFrame)
	}
	if code != 0 {
		reply.Flags, reply.Aux = frame.FlagError, code
		p.link.post(laneCtl, reply, []byte(why), true)
		return
	}
	p.link.post(laneCtl, reply, s, false)
	c.KeepHot() // the next get is likely soon and only the loop serves it
}

// deliverGetReply completes the get a reply answers (claimGet took it).
func (p *peer) deliverGetReply(h *frame.Header, bb *ioloop.Buffer) {
	p.mu.Lock()
	g := p.one.claimed
	p.one.claimed = nil
	p.mu.Unlock()
	defer putBuffer(bb)
	switch {
	case g == nil: // not ours: nothing waits for it
	case h.Flags&frame.FlagError != 0:
		reason := "(a reason too long to read)"
		if bb != nil {
			reason = string(bb.B)
		}
		g.complete(&RemoteError{Op: "get", Rank: p.rank, Reason: reason, Err: codeErr(h.Aux)})
	case h.Length != uint64(len(g.dst)):
		g.complete(&LengthMismatchError{Expected: uint64(len(g.dst)), Got: h.Length})
	default:
		g.complete(nil)
	}
}

// failGets fails every get waiting for a reply from p with its loss,
// but the one whose reply is being read, which the read's end completes
// (fill.go). p.mu is held and p.lost set.
func (p *peer) failGets() {
	for id, g := range p.one.gets {
		delete(p.one.gets, id)
		g.complete(p.errFor("get"))
	}
}

// onPutHeader is PUT's payload row (kinds.go): straight into the heap,
// or, outside it, discarded as it is read (onPut answers).
func (p *peer) onPutHeader(c *ioloop.Conn, _ lane, h *frame.Header) []byte {
	s, _, _ := p.heapRange(h.Offset, h.Length)
	if s == nil {
		c.Discard()
	}
	return s
}

// onPut is PUT's arrive row (kinds.go).
func (p *peer) onPut(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.deliverPut(c, h, bb)
}

// onPutAck is PUT_ACK's arrive row (kinds.go).
func (p *peer) onPutAck(_ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.notePutErr(h, bb)
}

// onGetReq is GET_REQ's arrive row (kinds.go).
func (p *peer) onGetReq(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.serveGet(c, h, bb)
}

// onGetReplyHeader is GET_REPLY's payload row (kinds.go).
func (p *peer) onGetReplyHeader(c *ioloop.Conn, _ lane, h *frame.Header) []byte {
	return p.claimGet(c, h)
}

// onGetReply is GET_REPLY's arrive row (kinds.go).
func (p *peer) onGetReply(_ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.deliverGetReply(h, bb)
}

// getReq is one pending get (or Quiet fence): the reply with its id is read
// into dst. It is recycled through a pool.
type getReq struct {
	dst   []byte
	id    uint64
	req   [frame.GetReqSize]byte // the request payload, stable until sent
	err   error
	state atomic.Uint32 // reqPosted, reqClaimed, reqDone
	done  chan struct{} // buffered 1: completion token
}

func newGetReq() any { return &getReq{done: make(chan struct{}, 1)} }

func (g *getReq) complete(err error) {
	g.err = err
	g.state.Store(reqDone)
	g.done <- struct{}{}
}

func (g *getReq) reset() {
	g.dst, g.err = nil, nil
	g.state.Store(reqPosted)
}
