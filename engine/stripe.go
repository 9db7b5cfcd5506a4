package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
)

// Striping: a SEND of at least Options.StripeMin bytes to a peer joined by
// several streams (Options.Streams) is cut into one piece per stream. The
// head (piece 0, a SEND with FlagMore whose Offset is the whole length)
// takes stream 0, in order with every other frame, and is matched like
// any SEND; the other pieces (STRIPE frames) are read straight into the
// matched receive's buffer at their offset. See frame/spec.md.

// piece returns the byte range of piece i of an n-byte message cut into k.
func piece(n, k, i int) (lo, hi int) {
	return int(uint64(n) * uint64(i) / uint64(k)), int(uint64(n) * uint64(i+1) / uint64(k))
}

// striped is a striped message being received.
type striped struct {
	tag, aux uint32
	total    int
	dst      []byte                     // where the pieces go
	r        *recvReq                   // the claimed receive, or nil
	bb       *bytebufferpool.ByteBuffer // nobody waited: the pooled buffer dst is
	pending  uint32                     // streams whose piece has not started
	left     int                        // bytes not yet arrived
	held     bool                       // stream 0 paused until it completes
}

// sendStriped sends p to pr in one piece per stream. Every piece is queued
// before any of the next striped message (stripeMu), so that each stream
// carries its pieces in the order of the heads. Once queued, the message
// is sent whole: if cancel closes before it is written, the call returns
// nil at once and what is left, copied, goes out in the background; a
// cancel that closed before the call drops it (ErrCanceled).
func (t *NetTransport) sendStriped(cancel <-chan struct{}, pr *peer, tag, aux uint32, p []byte) error {
	select {
	case <-cancel:
		return ioloop.ErrCanceled
	default:
	}
	k := len(pr.streams)
	var ws [MaxStreams]ioloop.Write
	var err error
	started := 0
	pr.stripeMu.Lock()
	for i := range k {
		lo, hi := piece(len(p), k, i)
		h := frame.Header{Kind: frame.KindStripe, Src: uint32(t.rank), Tag: tag, Offset: uint64(lo)}
		if i == 0 {
			h = frame.Header{Kind: frame.KindSend, Flags: frame.FlagMore, Src: uint32(t.rank), Tag: tag, Aux: aux, Offset: uint64(len(p))}
		}
		if ws[i], err = pr.streams[i].Start(&h, p[lo:hi]); err != nil {
			break
		}
		started++
	}
	pr.stripeMu.Unlock()
	if err != nil && started > 0 {
		pr.conn.Abort(err) // a message missing pieces would never complete
	}
	for i := range started {
		// Once queued, every piece must arrive (a piece without its head,
		// or a head without its pieces, would stall a stream for good): if
		// cancel closes first, what is left is copied and sent in the
		// background, and the message is delivered.
		if werr := ws[i].WaitDetach(cancel); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return t.connErr(pr, "send", err)
	}
	return nil
}

// headPayload names where the head of a striped message goes: straight
// into a posted receive that fits, else into a pooled buffer for the whole
// message (nothing waits for it; reading stops until the message is whole,
// so that nothing behind it on stream 0 overtakes it). Like a large SEND,
// it stays in the socket while nothing at all waits on this peer.
func (p *peer) headPayload(c *ioloop.Conn, h *frame.Header) []byte {
	total := int(h.Offset)
	if len(p.streams) < 2 || h.Offset < h.Length || h.Offset > p.t.opts.MaxFrame {
		return nil // Deliver drops the connection
	}
	p.mu.Lock()
	q := p.tags[h.Tag]
	var r *recvReq
	if q != nil && q.msgs.len() == 0 {
		r, _ = q.recvs.peek()
	}
	if r == nil && p.waiting == 0 {
		p.deferred = true
		c.Defer()
		p.mu.Unlock()
		return nil
	}
	m := &striped{tag: h.Tag, aux: h.Aux, total: total, left: total}
	if r != nil && r.fits(total) {
		q.recvs.pop()
		p.tidy(h.Tag, q)
		p.waiting--
		r.state.Store(reqClaimed)
		r.aux = h.Aux
		if r.into {
			r.dst = r.dst[:total]
		} else {
			r.data = make([]byte, total)
			r.dst = r.data
		}
		m.r, m.dst = r, r.dst
	} else {
		m.bb = ioloop.GetBuffer(total)
		m.dst = m.bb.B
	}
	for i := 1; i < len(p.streams); i++ {
		if lo, hi := piece(total, len(p.streams), i); hi > lo {
			m.pending |= 1 << i
		}
	}
	p.striped = append(p.striped, m)
	p.head = m
	resume := p.stripeDeferred
	p.stripeDeferred = 0
	p.mu.Unlock()
	for i, s := range p.streams {
		if resume&(1<<i) != 0 {
			s.Resume()
		}
	}
	return m.dst[:h.Length]
}

// headDone accounts the head's bytes; a message nobody waited for holds
// stream 0 until its other pieces are in.
func (p *peer) headDone(c *ioloop.Conn, h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	if bb != nil { // headPayload refused it
		ioloop.PutBuffer(bb)
		p.t.opts.Logger.Warn("boltmesh: a peer sent a malformed striped message; dropping it", "rank", p.rank, "length", h.Offset)
		c.Close()
		return
	}
	p.mu.Lock()
	m := p.head
	p.head = nil
	m.left -= int(h.Length)
	done := m.left == 0
	if !done && m.r == nil {
		m.held = true
		c.Pause()
	}
	p.mu.Unlock()
	if done {
		p.finishStriped(m)
	}
}

// finishStriped completes a whole striped message: its receive, or the
// queue of messages nobody waited for.
func (p *peer) finishStriped(m *striped) {
	p.mu.Lock()
	for i, s := range p.striped {
		if s == m {
			p.striped = append(p.striped[:i], p.striped[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	if m.r != nil {
		m.r.n = m.total
		m.r.complete(nil)
		return
	}
	p.deliver(p.conn, m.tag, m.aux, m.bb)
	if m.held {
		go p.conn.Resume() // not from inside another stream's delivery
	}
}

// stripeStream is the handler of a peer's stream i > 0, which carries
// only STRIPE frames, in the order of their heads.
type stripeStream struct {
	p   *peer
	i   int
	cur *striped // the message whose piece is being read
}

var _ ioloop.Handler = (*stripeStream)(nil)

// Payload implements ioloop.Handler: the piece goes straight to its place
// in the message, or stays in the socket until the head has arrived.
func (s *stripeStream) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	p := s.p
	if h.Kind != frame.KindStripe {
		return nil // Deliver drops the connection
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var m *striped
	for _, x := range p.striped {
		if x.pending&(1<<s.i) != 0 {
			m = x
			break
		}
	}
	if m == nil {
		p.stripeDeferred |= 1 << s.i
		c.Defer()
		return nil
	}
	lo, hi := piece(m.total, len(p.streams), s.i)
	if h.Tag != m.tag || h.Offset != uint64(lo) || h.Length != uint64(hi-lo) {
		return nil
	}
	m.pending &^= 1 << s.i
	s.cur = m
	return m.dst[lo:hi]
}

// Deliver implements ioloop.Handler.
func (s *stripeStream) Deliver(c *ioloop.Conn, h *frame.Header, _ []byte, bb *bytebufferpool.ByteBuffer) {
	p := s.p
	if bb != nil {
		ioloop.PutBuffer(bb)
		p.t.opts.Logger.Warn("boltmesh: unexpected frame on a stripe stream; dropping the peer", "rank", p.rank, "kind", h.Kind, "stream", s.i)
		p.conn.Abort(ErrStripe)
		return
	}
	p.mu.Lock()
	m := s.cur
	s.cur = nil
	m.left -= int(h.Length)
	done := m.left == 0
	p.mu.Unlock()
	if done {
		p.finishStriped(m)
	}
}

// Closed implements ioloop.Handler: losing one stream loses the peer.
func (s *stripeStream) Closed(_ *ioloop.Conn, err error) {
	if c := s.p.conn; c != nil {
		c.Abort(err)
	}
}

// failStriped fails the receives of striped messages in progress; p.mu
// must be held. Their buffers may still be read into, so they are left to
// the garbage collector rather than the pool.
func (p *peer) failStriped() {
	for _, m := range p.striped {
		if m.r != nil {
			m.r.complete(p.errFor("recv"))
		}
	}
	p.striped, p.head = nil, nil
}

// closeStripes closes the peer's streams other than the first.
func (p *peer) closeStripes() {
	for _, s := range p.streams[1:] {
		if s != nil {
			s.Close()
		}
	}
}
