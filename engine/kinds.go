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
// handling next to the payload's: methods of peer, each in the file of
// the component the kind belongs to. (Filled in init: the handlers reach
// peer.arrive, which reads the table.)
var kinds [256]frameOps

func init() {
	kinds = [256]frameOps{
		frame.KindSend:      {(*peer).onSendHeader, (*peer).onSend},         // match.go
		frame.KindAbandon:   {nil, (*peer).onAbandon},                       // lend.go
		frame.KindRTS:       {(*peer).onRTSHeader, (*peer).onRTS},           // rendezvous.go
		frame.KindCTS:       {nil, (*peer).onCTS},                           // rendezvous.go
		frame.KindData:      {(*peer).dataPayload, (*peer).onData},          // rendezvous.go
		frame.KindCredit:    {nil, (*peer).onCredit},                        // credit.go
		frame.KindPut:       {(*peer).onPutHeader, (*peer).onPut},           // peer_heap.go
		frame.KindPutAck:    {nil, (*peer).onPutAck},                        // peer_heap.go
		frame.KindGetReq:    {nil, (*peer).onGetReq},                        // peer_heap.go
		frame.KindGetReply:  {(*peer).onGetReplyHeader, (*peer).onGetReply}, // peer_heap.go
		frame.KindRPCReq:    {(*peer).onServiceHeader, (*peer).onService},   // service.go
		frame.KindRPCReply:  {(*peer).onServiceHeader, (*peer).onService},   // service.go
		frame.KindHeartbeat: {nil, (*peer).onHeartbeat},                     // link_live.go
		frame.KindWake:      {nil, (*peer).onWake},                          // barrier_mail.go
		frame.KindRelay:     {(*peer).onRelayHeader, (*peer).onRelay},       // relay.go
		frame.KindPart:      {(*peer).onRelayHeader, (*peer).onRelay},       // relay.go
		frame.KindDrop:      {nil, (*peer).onDrop},                          // lastword.go
		frame.KindGoodbye:   {nil, (*peer).onGoodbye},                       // goodbye.go
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
