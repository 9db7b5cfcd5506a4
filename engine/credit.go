package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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

// outCredit is the credit this rank holds for sending to one peer. Lock
// rule: mu guards every field but known, an atomic copy of window that
// senders read without mu (it never changes once set), and granted and
// used, atomics: take, on every send's way, is one compare-and-swap, not
// a lock and an unlock; granted is stored under mu (grant), with the
// wake-up. Waiters take wake under mu and then try take, so that a grant
// after that try closes it; they wait on it without mu.
type outCredit struct {
	mu      sync.Mutex
	granted atomic.Uint64 // cumulative credit the peer granted
	used    atomic.Uint64 // cumulative credit this rank's frames used
	window  uint64        // the peer's first grant: its whole window; 0 until it came
	wake    chan struct{} // closed and replaced when granted grows or the peer is lost, if taken
	taken   bool          // a waiter took wake since it was made: a change must close it
	lost    bool
	known   atomic.Uint64 // window, once the first grant came
}

func (c *outCredit) init() { c.wake = make(chan struct{}) }

// take uses cost if that much is available and reports whether it did.
func (c *outCredit) take(cost uint64) bool {
	for {
		used := c.used.Load()
		if c.granted.Load()-used < cost {
			return false
		}
		if c.used.CompareAndSwap(used, used+cost) {
			return true
		}
	}
}

// giveBack returns cost taken for a frame that was never sent.
func (c *outCredit) giveBack(cost uint64) {
	c.used.Add(-cost)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changed()
}

// changed wakes the waiters, if any took wake: a grant nobody waits for
// (the usual case) makes no channel.
func (c *outCredit) changed() {
	if c.taken && !c.lost {
		close(c.wake)
		c.wake, c.taken = make(chan struct{}), false
	}
}

// state returns the window (0 before the first grant), whether the peer
// is lost, and the channel that the next change closes, for a waiter.
func (c *outCredit) state() (window uint64, lost bool, wake <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken = true
	return c.window, c.lost, c.wake
}

// grant records the peer's cumulative grant total.
func (c *outCredit) grant(total uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.window == 0 {
		c.window = total
		c.known.Store(total)
	}
	if total > c.granted.Load() {
		c.granted.Store(total)
		c.changed()
	}
}

// fail wakes every waiter for good: the peer is lost.
func (c *outCredit) fail() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lost {
		c.lost = true
		close(c.wake)
	}
}

// inCredit is the credit this rank granted one peer. Lock rule: mu guards
// every field; it is a leaf, taken also under the peer's mu (sendPayload)
// and never holding another lock.
type inCredit struct {
	mu      sync.Mutex
	window  uint64 // Options.MaxQueuedBytes
	granted uint64 // cumulative credit granted (sent, or about to be)
	used    uint64 // cumulative credit of the credited frames that arrived
	freed   uint64 // cumulative credit released
}

// use accounts a credited frame of cost that arrived, and releases it at
// once if free (it goes straight into a posted receive). It returns the
// new grant total to send (0: none), or an error if the peer had no
// credit for the frame.
func (c *inCredit) use(cost uint64, free bool) (uint64, error) {
	c.mu.Lock()
	if c.granted-c.used < cost {
		left := c.granted - c.used
		c.mu.Unlock()
		return 0, fmt.Errorf("%w: a frame of %d bytes of credit with %d left", ErrFlowControl, cost, left)
	}
	c.used += cost
	if free {
		c.freed += cost
	}
	total := c.regrant()
	c.mu.Unlock()
	return total, nil
}

// free releases cost and returns the new grant total to send (0: none).
func (c *inCredit) free(cost uint64) uint64 {
	c.mu.Lock()
	c.freed += cost
	total := c.regrant()
	c.mu.Unlock()
	return total
}

// regrant decides whether released credit goes back now: once a quarter
// of the window is released, and as soon as anything is while less than
// half of the window is left to the sender (which may then be waiting for
// the largest frame it can send, a quarter of the window). mu is held.
func (c *inCredit) regrant() uint64 {
	total := c.freed + c.window
	back := total - c.granted
	if back == 0 || back < c.window/4 && c.granted-c.used >= c.window/2 {
		return 0
	}
	c.granted = total
	return total
}

// eagerMax is the largest frame.Cost of a message sent eagerly (straight
// away, held by the receiver until received) to a peer whose window is
// window; longer messages are sent by rendezvous (see rendezvous.go).
func (t *NetTransport) eagerMax(window uint64) uint64 {
	return min(frame.Cost(uint64(t.opts.EagerMax)), window/4)
}

// sendGrant sends p the grant total, if any.
func (p *peer) sendGrant(total uint64) {
	if total == 0 || p.link == nil {
		return
	}
	h := frame.Header{Kind: frame.KindCredit, Src: uint32(p.t.rank), Offset: total}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no credit
}

// openWindow grants p its whole window: the first CREDIT of a connection.
func (p *peer) openWindow() {
	c := &p.in
	c.mu.Lock()
	total := uint64(0)
	if c.granted == 0 {
		c.granted = c.window
		total = c.granted
	}
	c.mu.Unlock()
	p.sendGrant(total)
}

// useCredit accounts a credited frame from p as it arrives, and drops p
// if it had no credit for it. It reports whether the frame may be read.
func (p *peer) useCredit(c *ioloop.Conn, cost uint64) bool {
	total, err := p.in.use(cost, false)
	if err != nil {
		p.noCredit(c, err)
		return false
	}
	p.sendGrant(total)
	return true
}

// noCredit drops p, which sent a frame beyond its credit (err) on c.
func (p *peer) noCredit(c *ioloop.Conn, err error) {
	p.drop(c, err)
}

// freeCredit releases cost of p's credit.
func (p *peer) freeCredit(cost uint64) { p.sendGrant(p.in.free(cost)) }

// acquire takes cost of the credit for sending to p, waiting for it (and
// driving p's connection while it spins) until cancel closes or p is lost.
func (t *NetTransport) acquire(p *peer, cost uint64, cancel <-chan struct{}, op string) error {
	if p.out.take(cost) {
		return nil
	}
	if t.spinUntil(p, laneCtl, func() bool { return p.out.take(cost) }) {
		return nil
	}
	for {
		_, lost, wake := p.out.state()
		if p.out.take(cost) {
			return nil
		}
		if lost {
			return t.connErr(p, op, ErrPeerLost)
		}
		select {
		case <-wake:
		case <-cancel:
			return ioloop.ErrCanceled
		}
	}
}

// awaitWindows waits until every peer has granted its window, or ctx
// ends: a transport is returned only once it can send to every peer
// without a first wait.
func (t *NetTransport) awaitWindows(ctx context.Context) error {
	for _, p := range t.view().peers {
		if !p.up() {
			continue
		}
		if _, err := t.window(p, ctx.Done(), "join"); err != nil {
			if errors.Is(err, ioloop.ErrCanceled) {
				return fmt.Errorf("boltmesh: rank %d: rank %d granted no flow-control window within %v: %w", t.rank, p.rank, t.opts.DialTimeout, ctx.Err())
			}
			return err
		}
	}
	return nil
}

// window waits for p's first grant and returns p's window.
func (t *NetTransport) window(p *peer, cancel <-chan struct{}, op string) (uint64, error) {
	if w := p.out.known.Load(); w > 0 {
		return w, nil // the usual case: no lock
	}
	for {
		w, lost, wake := p.out.state()
		switch {
		case w > 0:
			return w, nil
		case lost:
			return 0, t.connErr(p, op, ErrPeerLost)
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
	p.out.grant(h.Offset)
}
