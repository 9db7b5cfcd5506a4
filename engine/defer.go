package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Deferred payloads. Where the control lane is a stream of its own (a
// full mesh, see meshLink), nothing on data stream 0 can be needed by
// anything but a receive: a large eager SEND that arrives before its
// receive may then stay in the socket until a receive from its sender is
// posted (ioloop.Conn.Defer), to be read straight into that receive's
// buffer instead of being read ahead into a pooled buffer and copied.

// deferMin is the payload size from which a SEND that no receive waits
// for is left in the data stream's socket until a receive from its
// sender is posted.
const deferMin = 32 << 10

// maybeDefer defers the eager SEND h on c, lane l of p's link, if nothing
// can want it or what is behind it yet: no receive from p is posted, no
// rendezvous message from p is coming in, and the payload is large. p.mu
// is held.
func (p *peer) maybeDefer(c *ioloop.Conn, l lane, h *frame.Header) bool {
	if h.Length < deferMin || p.posted > 0 || len(p.rdvIn) > 0 || l != laneData || !p.link.ownCtl() {
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
