package engine

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// frameOps is how the matcher takes one kind of frame: where its payload
// goes (payload; nil, or a nil result, for none or a pooled buffer), and
// what the whole frame does (arrive, which owns bb when it is not nil).
// The link has checked that the kind may come on the lane it came on.
// A kind without a row (HELLO, AUTH, REJECT, NEIGHBOUR after the
// handshake; GONE but from a star's coordinator, which its hub takes)
// breaks the protocol.
type frameOps struct {
	payload func(p *peer, c *ioloop.Conn, l lane, h *frame.Header) []byte
	arrive  func(p *peer, c *ioloop.Conn, l lane, h *frame.Header, payload []byte, bb *ioloop.Buffer)
}

// kinds is the matcher's table of frame kinds, one row each, the header's
// handling next to the payload's. (Filled in init: the handlers reach
// peer.arrive, which reads the table.)
var kinds [256]frameOps

func init() {
	kinds[frame.KindSend] = frameOps{
		payload: func(p *peer, c *ioloop.Conn, l lane, h *frame.Header) []byte {
			cost := frame.Cost(h.Length)
			if p.m.chargedDeferred() {
				cost = 0 // used when the payload was deferred
			}
			return p.sendPayload(c, l, h, cost)
		},
		arrive: func(p *peer, _ *ioloop.Conn, _ lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
			if bb == nil {
				p.completeClaimed(len(payload))
				return
			}
			p.deliverSend(h.Tag, h.Aux, bb)
		},
	}
	kinds[frame.KindAbandon] = frameOps{ // no payload, no credit, never queued
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
			if !isOwnedTag(h.Tag) {
				p.violation(c, fmt.Errorf("%w: ABANDON on tag %#x, outside the owned tag range", ErrProtocol, h.Tag))
				return
			}
			p.mu.Lock()
			p.abandoned(h.Tag, h.Offset)
			p.mu.Unlock()
		},
	}
	kinds[frame.KindRTS] = frameOps{
		payload: func(p *peer, c *ioloop.Conn, l lane, h *frame.Header) []byte {
			// A withdrawal uses credit on the control lane (see withdrawRTS).
			credited := h.Flags&frame.FlagError == 0 || l == laneCtl
			if credited && !p.useCredit(c, frame.Cost(0)) {
				return nil
			}
			return p.rtsBuf(l)[:h.Length] // at most RTSCopySize: checked with the header
		},
		arrive: func(p *peer, c *ioloop.Conn, l lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.deliverRTS(c, l, h, bb)
		},
	}
	kinds[frame.KindCTS] = frameOps{
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
			p.deliverCTS(c, h)
		},
	}
	kinds[frame.KindData] = frameOps{
		payload: func(p *peer, c *ioloop.Conn, l lane, h *frame.Header) []byte { return p.dataPayload(c, l, h) },
		arrive: func(p *peer, _ *ioloop.Conn, l lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
			p.dataDone(l, h)
		},
	}
	kinds[frame.KindCredit] = frameOps{
		arrive: func(p *peer, _ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
			p.out.grant(h.Offset)
		},
	}
	kinds[frame.KindPut] = frameOps{
		payload: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header) []byte {
			s, _, _ := p.heapRange(h.Offset, h.Length)
			if s == nil {
				c.Discard() // refused: arrive answers
			}
			return s
		},
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.deliverPut(c, h, bb)
		},
	}
	kinds[frame.KindPutAck] = frameOps{
		arrive: func(p *peer, _ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.notePutErr(h, bb)
		},
	}
	kinds[frame.KindGetReq] = frameOps{
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.serveGet(c, h, bb)
		},
	}
	kinds[frame.KindGetReply] = frameOps{
		payload: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header) []byte { return p.claimGet(c, h) },
		arrive: func(p *peer, _ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.deliverGetReply(h, bb)
		},
	}
	service := frameOps{
		payload: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header) []byte { return p.servicePayload(c, h) },
		arrive: func(p *peer, _ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.deliverService(h, bb)
		},
	}
	kinds[frame.KindRPCReq], kinds[frame.KindRPCReply] = service, service
	kinds[frame.KindHeartbeat] = frameOps{
		arrive: func(_ *peer, _ *ioloop.Conn, _ lane, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
		},
	}
	kinds[frame.KindWake] = frameOps{ // no payload, no credit, never queued
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
			mb := p.link.mailbox()
			if mb == nil {
				p.violation(c, fmt.Errorf("%w: WAKE from rank %d, which has no mailbox with this rank", ErrProtocol, p.rank))
				return
			}
			mb.Woken(h.Tag == wakeBarrier)
		},
	}
	// Only a star's coordinator sends these, to a worker, whose hub takes
	// them (relay.go); from anyone else they break the protocol, refused
	// on the header, whatever payload a PART announces.
	relayOnly := frameOps{
		payload: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header) []byte {
			p.violation(c, fmt.Errorf("%w: a %v, which only a star's coordinator sends, and only to a worker", ErrProtocol, h.Kind))
			return nil
		},
		arrive: func(_ *peer, _ *ioloop.Conn, _ lane, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
			putBuffer(bb)
		},
	}
	kinds[frame.KindRelay], kinds[frame.KindPart] = relayOnly, relayOnly
	kinds[frame.KindDrop] = frameOps{ // the sender's last frame: no credit
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
			p.deliverDrop(c, h, payload)
			putBuffer(bb)
		},
	}
	kinds[frame.KindGoodbye] = frameOps{
		arrive: func(p *peer, c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
			p.deliverGoodbye(c, h)
			putBuffer(bb)
		},
	}
}

// payload is the matcher's part of ioloop.Handler.Payload for a frame
// that came on lane l of p's link: its kind's payload (kinds). It
// accounts the credit of a credited frame and names where the payload
// goes. An eager SEND whose receive is posted is read straight into the
// receiver's buffer; one that nobody waits for, into a pooled buffer
// (held within the peer's credit). A payload that will be refused (a PUT
// outside the heap, a reply nobody waits for) is discarded as it is read.
func (p *peer) payload(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	ops := &kinds[h.Kind]
	switch {
	case ops.arrive == nil:
		p.violation(c, fmt.Errorf("%w: a %v frame, which no peer sends after the handshake", ErrProtocol, h.Kind))
	case ops.payload != nil:
		return ops.payload(p, c, l, h)
	}
	return nil
}

// arrive is the matcher's part of ioloop.Handler.Deliver for a frame
// that came whole on lane l of p's link: its kind's arrive (kinds).
func (p *peer) arrive(c *ioloop.Conn, l lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	if f := kinds[h.Kind].arrive; f != nil {
		f(p, c, l, h, payload, bb)
		return
	}
	putBuffer(bb) // refused in payload
}
