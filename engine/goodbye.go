package engine

import (
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The orderly close (frame/spec.md, GOODBYE). A closing rank sends every
// peer GOODBYE (sayGoodbye) and waits, at most goodbyeWait, for each to
// answer GOODBYE|Reply before it shuts its connections down. A peer
// answers once it has noted the GOODBYE, so that any later break of the
// connection, even a write that fails because the closing rank's socket
// was reset before the peer read on, is taken for the orderly close it is
// (ErrPeerClosed, and the loss its GOODBYE reported; see view.go), not for
// a crash.

// farewell is what a peer's GOODBYE told, and whether it answered this
// rank's. Lock rule: none needed (atomics, a channel closed once).
type farewell struct {
	said      atomic.Bool   // the peer announced an orderly close
	done      atomic.Uint64 // barriers it had completed then
	ownerDone atomic.Uint32 // and its owned range's owner's progress, which the engine does not read
	lost      atomic.Int32  // and the first rank it knew lost, or -1 (internal/view: Loss)
	answered  chan struct{} // closed when it answered this rank's GOODBYE, or was lost
	once      sync.Once
}

func (f *farewell) init() { f.answered = make(chan struct{}) }

// closing reports whether the peer announced an orderly close.
func (f *farewell) closing() bool { return f.said.Load() }

// told returns what the peer's GOODBYE told: the barriers it had
// completed, the owner's progress value, and the first rank it knew
// lost (-1: none).
func (f *farewell) told() (done uint64, coll uint32, lost int) {
	return f.done.Load(), f.ownerDone.Load(), int(f.lost.Load())
}

// deliverGoodbye handles a GOODBYE from p that came on c: its answer to
// this rank's, or p's own, which is noted and answered on c (p's link
// may not be up yet when a peer leaves while the mesh forms).
func (p *peer) deliverGoodbye(c *ioloop.Conn, h *frame.Header) {
	if h.Flags&frame.FlagReply != 0 {
		p.byeAnswer()
		return
	}
	p.bye.done.Store(h.Offset)
	p.bye.ownerDone.Store(h.Aux)
	p.bye.lost.Store(int32(p.t.goodbyeLost(p.rank, h.Tag)))
	p.bye.said.Store(true)
	a := frame.Header{Kind: frame.KindGoodbye, Flags: frame.FlagReply, Src: uint32(p.t.rank)}
	if p.t.topo.hub != nil && p.rank != 0 {
		a.Dst = uint16(p.rank + 1) // a star worker's peer, through the coordinator (its link may not be up yet)
	}
	c.Post(&a, nil, false) // a lost peer needs no answer
}

// byeAnswer records that p answered this rank's GOODBYE, or that it need
// not: it is lost.
func (p *peer) byeAnswer() {
	p.bye.once.Do(func() { close(p.bye.answered) })
}

// onGoodbye is GOODBYE's arrive row (kinds.go).
func (p *peer) onGoodbye(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.deliverGoodbye(c, h)
	putBuffer(bb)
}

// goodbyeLost decodes the Tag of a GOODBYE from rank from: the first rank
// the sender knew to be lost, or -1 for none (or a rank that cannot be
// one: outside the world, the sender, or this rank, which is alive).
func (t *NetTransport) goodbyeLost(from int, tag uint32) int {
	if tag == 0 || tag > uint32(t.world) {
		return -1
	}
	if r := int(tag) - 1; r != from && r != t.rank {
		return r
	}
	return -1
}
