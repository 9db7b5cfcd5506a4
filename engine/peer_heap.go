package engine

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
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
	p.gets[g.id] = g
	resume := p.await()
	p.mu.Unlock()
	if resume {
		p.conn.Resume()
	}
	return nil
}

// removeGet takes g back if its reply has not started; p.mu not held.
func (p *peer) removeGet(g *getReq) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gets[g.id] != g || g.state.Load() != reqPosted {
		return false
	}
	delete(p.gets, g.id)
	p.waiting--
	return true
}

// takeGet removes and returns the get waiting for reply id; p.mu held.
func (p *peer) takeGet(id uint64) *getReq {
	g := p.gets[id]
	if g != nil {
		delete(p.gets, id)
		p.waiting--
	}
	return g
}

// claimGet names the destination of a GET reply: the waiting get's own
// buffer, when the reply carries data of the expected length.
func (p *peer) claimGet(h *frame.Header) []byte {
	if h.Flags&frame.FlagError != 0 || h.Length == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gets[h.Offset]
	if g == nil || uint64(len(g.dst)) != h.Length {
		return nil
	}
	p.takeGet(h.Offset)
	g.state.Store(reqClaimed)
	p.claimedGet = g
	return g.dst
}

// deliverPut finishes a PUT; one refused (read into bb, not the heap) is
// answered with a PUT_ACK carrying the reason.
func (p *peer) deliverPut(c *ioloop.Conn, h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	if bb == nil {
		return
	}
	ioloop.PutBuffer(bb)
	if _, code, why := p.heapRange(h.Offset, h.Length); code != 0 {
		ack := frame.Header{Kind: frame.KindPutAck, Flags: frame.FlagError, Dst: p.via, Src: uint32(p.t.rank), Aux: code, Offset: h.Offset}
		c.Post(&ack, []byte(why), true)
	}
}

// notePutErr records a put refusal for the next Quiet.
func (p *peer) notePutErr(h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	err := &RemoteError{Op: "put", Rank: p.rank, Reason: string(bb.B), Err: codeErr(h.Aux)}
	ioloop.PutBuffer(bb)
	p.mu.Lock()
	if p.putErr == nil {
		p.putErr = err
	}
	p.mu.Unlock()
}

// fenceDone records that every put up to seq is complete at p.
func (p *peer) fenceDone(seq uint64) {
	for {
		cur := p.fenced.Load()
		if cur >= seq || p.fenced.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// takePutErr returns and clears the first refusal since the last call.
func (p *peer) takePutErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.putErr
	p.putErr = nil
	return err
}

// serveGet answers a GET request with the heap range, sent from the heap
// itself without blocking the reader.
func (p *peer) serveGet(c *ioloop.Conn, h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	req, err := frame.DecodeGetReq(bb.B)
	ioloop.PutBuffer(bb)
	if err != nil {
		c.Close()
		return
	}
	reply := frame.Header{Kind: frame.KindGetReply, Dst: p.via, Src: uint32(p.t.rank), Offset: req.ID}
	s, code, why := p.heapRange(h.Offset, req.Length)
	if code != 0 {
		reply.Flags, reply.Aux = frame.FlagError, code
		c.Post(&reply, []byte(why), true)
		return
	}
	c.Post(&reply, s, false)
	c.KeepHot() // the next get is likely soon and only the loop serves it
}

// deliverGetReply completes the get a reply answers.
func (p *peer) deliverGetReply(h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	p.mu.Lock()
	var g *getReq
	if bb == nil {
		g, p.claimedGet = p.claimedGet, nil
	} else {
		g = p.takeGet(h.Offset)
	}
	p.mu.Unlock()
	if bb != nil {
		defer ioloop.PutBuffer(bb)
	}
	switch {
	case g == nil: // not ours: nothing waits for it
	case bb == nil:
		g.complete(nil)
	case h.Flags&frame.FlagError != 0:
		g.complete(&RemoteError{Op: "get", Rank: p.rank, Reason: string(bb.B), Err: codeErr(h.Aux)})
	case len(bb.B) != len(g.dst):
		g.complete(&LengthMismatchError{Expected: uint64(len(g.dst)), Got: uint64(len(bb.B))})
	default:
		copy(g.dst, bb.B)
		g.complete(nil)
	}
}
