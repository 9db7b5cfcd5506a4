package engine

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
)

// The control stream. In a full mesh each pair of ranks has, besides its
// data streams (streams[0], which carries SEND, RTS and DATA, and the
// stripe streams), one more connection for everything else: one-sided
// operations (PUT, GET and their answers), RPC, flow-control credit, CTS,
// withdrawals, abandons, heartbeats and GOODBYE. So none of those ever
// waits behind a message nobody has received yet: a large eager SEND that
// arrives before its receive may then stay in the data stream's socket
// until a receive from its sender is posted (Conn.Defer), to be read
// straight into that receive's buffer, as nothing behind it there can be
// needed by anything but a receive. A star has one connection per worker,
// which carries everything, and defers nothing.

// deferMin is the payload size from which a SEND that no receive waits
// for is left in the data stream's socket (ioloop.Conn.Defer) until a
// receive from its sender is posted, instead of being read ahead into a
// pooled buffer and copied.
const deferMin = 32 << 10

// ctlStream is the handler of a peer's control stream.
type ctlStream struct{ p *peer }

var _ ioloop.Handler = (*ctlStream)(nil)

// dataKind reports whether h is a frame of the data streams: a SEND (but
// an abandon), an RTS (but a withdrawal), or DATA.
func dataKind(h *frame.Header) bool {
	switch h.Kind {
	case frame.KindSend:
		return !isAbandon(h)
	case frame.KindRTS:
		return h.Flags&frame.FlagError == 0
	case frame.KindData:
		return true
	}
	return false
}

// Payload implements ioloop.Handler.
//
// GOODBYE comes on both streams, so that whichever ends first, the peer's
// orderly close is known by then (see sayGoodbye).
func (s *ctlStream) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if dataKind(h) || h.Dst != 0 {
		s.p.violation(c, fmt.Errorf("%w: a %v frame on the control stream", ErrProtocol, h.Kind))
		c.Discard()
		return nil
	}
	return s.p.Payload(c, h)
}

// Deliver implements ioloop.Handler.
func (s *ctlStream) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *bytebufferpool.ByteBuffer) {
	s.p.Deliver(c, h, payload, bb)
}

// Closed implements ioloop.Handler: losing the control stream loses the
// peer, unless the peer said GOODBYE and the stream merely ended, in which
// case its data stream ends on its own once what it sent before is read.
// A control stream that ended because the peer broke the protocol there
// (a frame that does not decode, after a GOODBYE too) loses the peer.
func (s *ctlStream) Closed(_ *ioloop.Conn, err error) {
	if c := s.p.conn; c != nil && (!s.p.goodbye.Load() || brokeProtocol(err)) {
		c.Abort(err)
	}
}

// brokeProtocol reports whether err, the end of a connection, is the
// peer's breach of the protocol rather than the connection's end.
func brokeProtocol(err error) bool {
	return errors.Is(err, ioloop.ErrProtocol) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrFlowControl)
}

// onStream reports whether a frame of h's kind may arrive on c, one of
// p's connections: in a full mesh data frames come on the data streams and
// the others on the control stream, but HEARTBEAT and GOODBYE on any, and
// a withdrawal on the control stream or data stream 0. (A star's one
// connection carries all.)
func (p *peer) onStream(c *ioloop.Conn, h *frame.Header) bool {
	ctl := p.ctl.Load()
	switch {
	case ctl == nil || h.Kind == frame.KindHeartbeat || h.Kind == frame.KindGoodbye:
		return true
	case h.Kind == frame.KindRTS && h.Flags&frame.FlagError != 0:
		return c == ctl || c == p.connOf(0) // a withdrawal: either (see withdrawRTS)
	}
	return (c == ctl) != dataKind(h)
}

// connOf returns data stream i, under mu: adopt may still be filling the
// streams in.
func (p *peer) connOf(i int) *ioloop.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams[i]
}

// maybeDefer defers the eager SEND h on the data stream c, if nothing can
// want it or what is behind it yet: no receive from p is posted, no
// rendezvous message from p is coming in, and the payload is large. p.mu
// is held.
func (p *peer) maybeDefer(c *ioloop.Conn, h *frame.Header) bool {
	if h.Length < deferMin || p.posted > 0 || len(p.rdvIn) > 0 || p.ctl.Load() == nil || c != p.conn {
		return false
	}
	p.deferred = true
	p.charged.Store(true)
	c.Defer()
	return true
}

// chargedDeferred reports whether the SEND whose payload the data stream's
// reader asks for again is the one it deferred, whose credit was used.
func (p *peer) chargedDeferred() bool {
	return p.charged.Load() && p.charged.CompareAndSwap(true, false) // only data stream 0 defers
}

// undefer reports whether the data stream must be read again because a
// receive from p was posted (or a rendezvous message's DATA is expected):
// what it waits for may be behind the deferred payload. p.mu is held.
func (p *peer) undefer() bool {
	was := p.deferred
	p.deferred = false
	return was
}
