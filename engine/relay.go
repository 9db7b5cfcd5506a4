package engine

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// A star's coordinator relays a routed frame whose payload is longer than
// relayPart in parts (link_stream.go): a RELAY that carries the frame's
// header, then PARTs in order, each written on as it is read, so that it
// never holds a whole payload. Frames from other sources may come between
// the parts; none from the same source but GONE, which abandons the frame.
// A worker takes the payload as if the frame had come whole: where it goes
// is chosen from the relayed header as the first part comes, and the frame
// arrives once its last part is in. (frame/spec.md, "Star".)

// relayIn is a frame relayed in parts, as a worker takes it from one peer.
type relayIn struct {
	on   bool                   // a RELAY came; its last PART has not
	hb   [frame.HeaderSize]byte // the RELAY's payload
	h    frame.Header           // the relayed frame's header
	drop bool                   // its payload is read through and dropped
	dst  []byte                 // where the payload goes: a buffer the peer named, or bb.B; nil until the first PART (or dropped)
	bb   *ioloop.Buffer         // a pooled buffer, where the peer named none
	got  uint64                 // bytes of the payload in
}

func (in *relayIn) reset() { *in = relayIn{} }

// relayed returns p's route, if p is a worker whose frames come through
// the coordinator, or nil.
func relayed(p *peer) *routeLink {
	if p == nil {
		return nil
	}
	l, _ := p.link.(*routeLink)
	return l
}

// breach drops the connection to the coordinator, which broke the
// protocol (what it did: err); every peer is then lost, and logged so.
func (u *hub) breach(c *ioloop.Conn, err error) {
	c.Abort(fmt.Errorf("%w: the coordinator %v", ErrProtocol, err))
}

// relayPayload is the hub's Payload for a RELAY or PART from p, whose
// route is l.
func (u *hub) relayPayload(c *ioloop.Conn, p *peer, l *routeLink, h *frame.Header) []byte {
	in := &l.in
	if h.Kind == frame.KindRelay {
		if in.on {
			u.breach(c, fmt.Errorf("sent a RELAY from rank %d before the last part of the one before", p.rank))
			return nil
		}
		return in.hb[:]
	}
	switch {
	case !in.on:
		u.breach(c, fmt.Errorf("sent a PART from rank %d that no RELAY announced", p.rank))
		return nil
	case h.Offset != in.got || h.Length == 0 || h.Length > in.h.Length-in.got:
		u.breach(c, fmt.Errorf("sent a PART of %d bytes at %d from rank %d, whose relayed %v has %d of its %d bytes", h.Length, h.Offset, p.rank, in.h.Kind, in.got, in.h.Length))
		return nil
	}
	if in.dst == nil && !in.drop {
		u.choose(c, p, in) // the first PART
	}
	if in.drop {
		c.Discard()
		return nil
	}
	return in.dst[in.got : in.got+h.Length]
}

// choose names where the payload of the frame relayed from p goes, as the
// peer would have for the frame whole (peer.payload): the buffer it names,
// a pooled one, or nowhere (it refused the frame, or p).
func (u *hub) choose(c *ioloop.Conn, p *peer, in *relayIn) {
	if refused(p) {
		in.drop = true
		return
	}
	b := p.payload(c, laneData, &in.h)
	switch {
	case c.Discarding() || refused(p):
		in.drop = true
	case b != nil && uint64(len(b)) == in.h.Length:
		in.dst = b
	default:
		in.bb = ioloop.GetBuffer(int(in.h.Length))
		in.dst = in.bb.B
	}
}

// relayDeliver is the hub's Deliver for a RELAY or PART from p, whose
// route is l: a RELAY starts the frame, and its last PART makes it arrive.
func (u *hub) relayDeliver(c *ioloop.Conn, p *peer, l *routeLink, h *frame.Header) {
	in := &l.in
	if h.Kind == frame.KindRelay {
		r, err := frame.DecodeRelay(in.hb[:], h.Src, u.t.opts.MaxFrame)
		if err != nil {
			u.breach(c, fmt.Errorf("sent a RELAY from rank %d: %w", p.rank, err))
			return
		}
		in.reset()
		in.on, in.h = true, r
		return
	}
	in.got += h.Length
	if in.got < in.h.Length {
		return
	}
	hdr := &l.whole // not a local: arrive's header would escape
	*hdr = in.h
	dst, bb, drop := in.dst, in.bb, in.drop
	in.reset()
	switch {
	case refused(p):
		putBuffer(bb) // read through, dropped
	case drop:
		p.arrive(c, laneData, hdr, nil, nil) // as ioloop delivers a discarded payload
	case bb != nil:
		p.arrive(c, laneData, hdr, bb.B, bb)
	default:
		p.arrive(c, laneData, hdr, dst, nil)
	}
}

// abandon ends the frame relayed from p, if one is coming, that will
// never be whole (p is gone, err, or the stream ended): a receive its
// payload was being read into fails, as when a stream breaks mid-frame.
func (in *relayIn) abandon(p *peer, err error) {
	if !in.on {
		return
	}
	reading := in.dst != nil
	putBuffer(in.bb)
	in.reset()
	if reading {
		p.readEnded(laneData, err)
	}
}

// onRelayHeader is the payload row of RELAY and PART (kinds.go): only a
// star's coordinator sends them, to a worker, whose hub takes them;
// from anyone else they break the protocol, refused on the header,
// whatever payload a PART announces.
func (p *peer) onRelayHeader(c *ioloop.Conn, _ lane, h *frame.Header) []byte {
	p.violation(c, fmt.Errorf("%w: a %v, which only a star's coordinator sends, and only to a worker", ErrProtocol, h.Kind))
	return nil
}

// onRelay is the arrive row of RELAY and PART (kinds.go): refused.
func (*peer) onRelay(_ *ioloop.Conn, _ lane, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
}
