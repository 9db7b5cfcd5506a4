package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Flow control (see frame/spec.md, "Flow control"). Each rank grants each
// peer a window of Options.MaxQueuedBytes of credit: the peer may have at
// most that much of credited frames (eager SENDs, RTSs, RPC requests, each
// costing frame.Cost of its payload) that this rank has not yet released.
// A frame is released when the application takes it (a receive, an RPC
// handler's Release) or at once when it goes straight into a posted
// buffer. Released credit goes back to the sender in cumulative CREDIT
// frames. So a peer can make this rank hold at most the window, however
// fast it sends; past it the sender waits for credit, and a peer that
// sends without credit breaks the protocol and is dropped. Nothing a peer
// sends ever has to stay unread for lack of memory: the control stream is
// always read, and a data stream waits only for the application (a large
// message left in its socket until its receive is posted, match.go), so
// one-sided operations and control frames never wait behind messages
// that nobody has received.

// eagerMax is the largest frame.Cost of a message sent eagerly (straight
// away, held by the receiver until received) to a peer whose window is
// window; longer messages are sent by rendezvous (see rendezvous.go).
func (o *Options) eagerMax(window uint64) uint64 {
	return min(frame.Cost(uint64(o.EagerMax)), window/4)
}

// Grants. Released credit goes back when a grant is due (internal/credit
// says when: In.Use and In.Free return the total then). A caller outside
// a read (a receive that takes a queued message, an owner's drop, an RPC
// release) writes it at once (sendGrant). A read upcall (a frame's
// handler, on whichever goroutine drains the stream) records it instead
// (noteGrant), and the drain writes what its upcalls recorded once it has
// let the stream go (ioloop.Drainer: writeGrants): a reader writes no
// CREDIT while it reads, and the grants a drain's frames make go out as
// one. Lock rule: none; peer.grantDue and NetTransport.grantsDue are
// atomics, and a grant written twice or out of order is harmless (the
// peer keeps the largest total: credit.Out.Grant).

// sendGrant sends p the grant total, if any.
func (p *peer) sendGrant(total uint64) {
	if total == 0 || p.link == nil {
		return
	}
	h := frame.Header{Kind: frame.KindCredit, Src: uint32(p.t.rank), Offset: total}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no credit
}

// noteGrant records the grant total, if any, for the end of the drain
// whose upcall found it due (writeGrants).
func (p *peer) noteGrant(total uint64) {
	if total == 0 || p.link == nil {
		return
	}
	for {
		due := p.grantDue.Load()
		if total <= due || p.grantDue.CompareAndSwap(due, total) {
			break
		}
	}
	p.t.grantsDue.Store(true)
}

// writeGrants writes the grants that read upcalls recorded (noteGrant),
// every peer's: the Drained of every stream's handler, at the end of a
// drain, with the stream let go.
func (t *NetTransport) writeGrants() {
	if !t.grantsDue.Load() || !t.grantsDue.CompareAndSwap(true, false) {
		return
	}
	for _, p := range t.view().Peers {
		if total := p.grantDue.Swap(0); total != 0 {
			p.sendGrant(total)
		}
	}
}

// openWindow grants p its whole window: the first CREDIT of a connection.
func (p *peer) openWindow() { p.sendGrant(p.in.Open()) }

// useCredit accounts a credited frame from p as it arrives, and drops p
// if it had no credit for it. It reports whether the frame may be read.
func (p *peer) useCredit(c *ioloop.Conn, cost uint64) bool {
	total, err := p.in.Use(cost, false)
	if err != nil {
		p.noCredit(c, err)
		return false
	}
	p.noteGrant(total)
	return true
}

// noCredit drops p, which sent a frame beyond its credit (err) on c.
func (p *peer) noCredit(c *ioloop.Conn, err error) {
	p.drop(c, err)
}

// freeCredit releases cost of p's credit, outside a read.
func (p *peer) freeCredit(cost uint64) { p.sendGrant(p.in.Free(cost)) }

// freeInRead releases cost of p's credit in a read upcall: a grant it
// makes due waits for the drain's end.
func (p *peer) freeInRead(cost uint64) { p.noteGrant(p.in.Free(cost)) }

// acquire takes cost of the credit for sending to p, waiting for it (and
// driving p's connection while it spins) until cancel closes or p is lost.
func (p *peer) acquire(cost uint64, cancel <-chan struct{}, op string) error {
	if p.out.Take(cost) {
		return nil
	}
	if p.t.spinUntil(p, laneCtl, func() bool { return p.out.Take(cost) }) {
		return nil
	}
	for {
		_, lost, wake := p.out.State()
		if p.out.Take(cost) {
			return nil
		}
		if lost {
			return p.t.connErr(p, op, ErrPeerLost)
		}
		select {
		case <-wake:
		case <-cancel:
			return ioloop.ErrCanceled
		}
	}
}

// window waits for p's first grant and returns p's window.
func (p *peer) window(cancel <-chan struct{}, op string) (uint64, error) {
	if w := p.out.Window(); w > 0 {
		return w, nil // the usual case: no lock
	}
	for {
		w, lost, wake := p.out.State()
		switch {
		case w > 0:
			return w, nil
		case lost:
			return 0, p.t.connErr(p, op, ErrPeerLost)
		}
		select {
		case <-wake:
		case <-cancel:
			return 0, ioloop.ErrCanceled
		}
	}
}

// onCredit is CREDIT's arrive row (kinds.go): the peer's grant total.
func (p *peer) onCredit(_ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	p.out.Grant(h.Offset)
}
