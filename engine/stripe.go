package engine

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
)

// Striping: a SEND of at least Options.StripeMin bytes to a peer joined by
// several streams (Options.Streams) goes by rendezvous (rendezvous.go),
// and its DATA is cut into one piece per stream, each read straight into
// its place in the receive's buffer. Stream 0 carries every other frame;
// the others carry only DATA. See frame/spec.md.

// stripeStream is the handler of a peer's stream i > 0.
type stripeStream struct {
	p *peer
	i int
}

var _ ioloop.Handler = (*stripeStream)(nil)

// Payload implements ioloop.Handler.
func (s *stripeStream) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if h.Kind != frame.KindData || h.Dst != 0 {
		s.p.violation(c, fmt.Errorf("%w: a %v frame on stream %d, which carries only DATA", ErrProtocol, h.Kind, s.i))
		c.Discard()
		return nil
	}
	return s.p.dataPayload(c, h)
}

// Deliver implements ioloop.Handler.
func (s *stripeStream) Deliver(_ *ioloop.Conn, h *frame.Header, _ []byte, bb *bytebufferpool.ByteBuffer) {
	putBuffer(bb)
	if h.Kind == frame.KindData {
		s.p.dataDone(h)
	}
}

// Closed implements ioloop.Handler: losing one stream loses the peer.
func (s *stripeStream) Closed(_ *ioloop.Conn, err error) {
	if c := s.p.conn; c != nil {
		c.Abort(err)
	}
}

// closeStreams closes the peer's streams other than the first, and its
// control stream.
func (p *peer) closeStreams() {
	p.mu.Lock()
	streams := append([]*ioloop.Conn(nil), p.streams[1:]...) // adopt may still be filling them in
	p.mu.Unlock()
	for _, s := range streams {
		if s != nil {
			s.Close()
		}
	}
	if c := p.ctl.Load(); c != nil {
		c.Close()
	}
}
