package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// routeLink joins two workers of a star: their frames go through the
// coordinator, on the worker's one stream to it, each addressed by Dst
// (the peer's rank+1), and come back from it with Src naming the peer.
// It shares the stream, and so its liveness, with the worker's streamLink
// to the coordinator: it has no heartbeat of its own.
//
// Lock rule: conn is written once, as the event loop adopts the stream to
// the coordinator and before any frame is read from it (routeVia), and
// only read after; in belongs to the stream's reader (the hub's methods).
type routeLink struct {
	oneStream
	via     uint16       // Dst of the frames to the peer: its rank+1
	refused atomic.Bool  // the peer broke the protocol: its frames are dropped unread
	in      relayIn      // a frame from the peer that the coordinator relays in parts (relay.go)
	whole   frame.Header // the header such a frame arrives with
}

var _ link = (*routeLink)(nil)

func (l *routeLink) post(_ lane, h frame.Header, p []byte, copyPayload bool) error {
	h.Dst = l.via
	return l.conn.Post(&h, p, copyPayload)
}

func (l *routeLink) send(_ lane, h frame.Header, p []byte, cancel <-chan struct{}) error {
	h.Dst = l.via
	return l.conn.SendCancel(&h, p, cancel)
}

func (l *routeLink) start(_ lane, h frame.Header, p []byte) (ioloop.Write, error) {
	h.Dst = l.via
	return l.conn.Start(&h, p)
}

func (l *routeLink) queue(_ lane, h frame.Header, p []byte) error {
	h.Dst = l.via
	return l.conn.Queue(&h, p)
}

// A route is not adopted: its stream is the worker's to the coordinator.
func (l *routeLink) handler(int) ioloop.Handler    { return nil }
func (l *routeLink) attach(int, *ioloop.Conn) bool { return false }
func (l *routeLink) usePair(*linkshm.Pair) error   { return errNoPair }
func (l *routeLink) checkLive(time.Time)           {} // the streamLink to the coordinator watches the stream

func (l *routeLink) cause(err error) error { return err }

func (l *routeLink) lastWord(*ioloop.Conn, error) {} // a refused worker is not told (refuse)

// refuse drops the peer p, which broke the protocol (err) on the stream
// to the coordinator: it is lost, and the hub drops whatever comes from
// it after, unread, while the stream goes on serving every other peer.
// The peer is not told (it hears nothing more from this rank): only a
// peer that breaks the protocol is refused.
func (l *routeLink) refuse(p *peer, err error) {
	l.refused.Store(true)
	p.lose(err)
}

// refused reports whether p is a star worker that this rank refused.
func refused(p *peer) bool {
	l, ok := p.link.(*routeLink)
	return ok && l.refused.Load()
}

// hub is the handler of a star worker's one stream: it hands each frame
// to the peer named by its source, takes a frame the coordinator relays
// in parts as if it came whole (relay.go), and fails every peer when the
// coordinator is lost.
type hub struct {
	t     *NetTransport
	ready chan struct{} // closed when the coordinator reports the world complete
	once  sync.Once
}

var _ ioloop.Failer = (*hub)(nil)

// routeVia sends a worker's frames for every other worker through the
// coordinator stream c. It runs as c is registered (adopt), before any
// frame is read from it.
func (u *hub) routeVia(c *ioloop.Conn) {
	for _, p := range u.t.view().Peers[1:] {
		if l, ok := p.link.(*routeLink); ok {
			l.conn = c
		}
	}
}

// from returns the peer a frame comes from, or nil for a frame no
// coordinator may send.
func (u *hub) from(h *frame.Header) *peer {
	if h.Dst != 0 || int(h.Src) >= u.t.world || int(h.Src) == u.t.rank {
		return nil
	}
	return u.t.peer(int(h.Src))
}

// Payload implements ioloop.Handler.
func (u *hub) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	p := u.from(h)
	relay := h.Kind == frame.KindRelay || h.Kind == frame.KindPart
	if p == nil { // refused on the header
		u.breach(c, fmt.Errorf("sent a %v frame with Src %d and Dst %d, from or to no peer of this worker", h.Kind, h.Src, h.Dst))
		return nil
	}
	if l := relayed(p); l != nil && relay {
		return u.relayPayload(c, p, l, h)
	} else if l != nil && l.in.on && h.Kind != frame.KindGone {
		u.breach(c, fmt.Errorf("sent a %v from rank %d before the last part of the frame it relays from there", h.Kind, p.rank))
		return nil
	} else if relay {
		u.breach(c, fmt.Errorf("sent a %v of its own", h.Kind))
		return nil
	}
	if h.Kind != frame.KindGone && h.Kind != frame.KindHeartbeat && !refused(p) {
		if b := p.payload(c, laneData, h); b != nil || !refused(p) {
			return b
		}
	}
	if h.Length > 0 {
		c.Discard() // Deliver drops the connection, or the refused worker's frame
	}
	return nil
}

// Deliver implements ioloop.Handler.
func (u *hub) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	p := u.from(h)
	switch {
	case p == nil:
		putBuffer(bb) // refused in Payload
	case h.Kind == frame.KindHeartbeat:
		putBuffer(bb)
		if p.rank == 0 {
			u.once.Do(func() { close(u.ready) })
		}
	case h.Kind == frame.KindRelay || h.Kind == frame.KindPart:
		u.relayDeliver(c, p, relayed(p), h) // Payload checked that p is a worker
	case h.Kind == frame.KindGone:
		putBuffer(bb)
		if p.rank != 0 {
			p.lose(errGone)
			relayed(p).in.abandon(p, errGone)
		}
	case refused(p):
		putBuffer(bb) // read through, dropped
	default:
		p.arrive(c, laneData, h, payload, bb)
	}
}

// Failing implements ioloop.Failer at a worker: the last word to the
// coordinator, if this rank ends their stream for a fault it found.
func (u *hub) Failing(c *ioloop.Conn, err error) {
	l := u.t.peer(0).link
	l.lastWord(c, l.cause(err))
}

// Closed implements ioloop.Handler: without the coordinator, every peer
// is lost.
func (u *hub) Closed(_ *ioloop.Conn, err error) {
	err = u.t.peer(0).link.cause(err) // the coordinator's link watches the stream
	for _, p := range u.t.view().Peers {
		if p.rank != u.t.rank {
			p.closed(err)
			p.readEnded(laneData, err)
			if l := relayed(p); l != nil {
				l.in.abandon(p, err)
			}
		}
	}
}

// Drained writes the grants this drain's upcalls recorded (credit.go).
func (u *hub) Drained(*ioloop.Conn) { u.t.writeGrants() }
