package engine

import (
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// streamLink joins a star's worker and its coordinator: one stream that
// carries every lane, in order, and so defers nothing and stripes
// nothing. At the coordinator it also carries the frames the worker
// routes to other workers (Dst, rank+1), which it forwards (forward); at
// a worker, its stream's frames are handed out by the hub (link_routed.go)
// to the peer each comes from.
//
// Lock rule: conn is written once, as the event loop adopts the stream
// and before any frame is read from it, and only read after; fwd has its
// own lock; watch belongs to the heartbeat goroutine (link_live.go); relaying belongs to
// the stream's reader (the handler's methods).
type streamLink struct {
	oneStream
	p        *peer
	fwd      fwdCounter // at the coordinator: what this worker's frames being forwarded hold (fwdCost)
	live     liveness
	watch    streamWatch
	relaying bool                   // at the coordinator: the frame being relayed in parts goes on (else its parts are dropped)
	relayHdr [frame.HeaderSize]byte // at the coordinator: a RELAY's payload, copied as it is posted
}

var (
	_ link               = (*streamLink)(nil)
	_ ioloop.PartHandler = (*streamLink)(nil)
	_ ioloop.Failer      = (*streamLink)(nil)
)

// relayPart is the longest part of a routed payload that a star's
// coordinator holds: a longer one is relayed in parts of this size as
// they come (RELAY, then PARTs; frame/spec.md "Star"), so that the
// coordinator holds at most Options.MaxQueuedBytes plus one part per
// worker whatever a worker announces, and the destination reads the
// payload while its source still sends it.
const relayPart = 256 << 10

func newStreamLink(p *peer) *streamLink {
	l := &streamLink{p: p}
	l.fwd.done = l.forwarded
	l.live.mustRead = p.t.rank == 0 // the coordinator's link to a worker
	return l
}

// handler is the link itself, but at a star's worker, where frames from
// every rank come on the one stream to the coordinator: its hub.
func (l *streamLink) handler(int) ioloop.Handler {
	if hub := l.p.t.topo.hub; hub != nil {
		return hub
	}
	return l
}

func (l *streamLink) attach(_ int, c *ioloop.Conn) bool {
	l.conn = c
	if hub := l.p.t.topo.hub; hub != nil {
		hub.routeVia(c) // before any frame from the coordinator is read
	}
	return true
}

func (l *streamLink) usePair(*linkshm.Pair) error { return errNoPair }

func (l *streamLink) post(_ lane, h frame.Header, p []byte, copyPayload bool) error {
	return l.conn.Post(&h, p, copyPayload)
}

func (l *streamLink) send(_ lane, h frame.Header, p []byte, cancel <-chan struct{}) error {
	return l.conn.SendCancel(&h, p, cancel)
}

func (l *streamLink) start(_ lane, h frame.Header, p []byte) (ioloop.Write, error) {
	return l.conn.Start(&h, p)
}

func (l *streamLink) queue(_ lane, h frame.Header, p []byte) error { return l.conn.Queue(&h, p) }

func (l *streamLink) checkLive(now time.Time) {
	l.live.check(l.p, l.conn, &l.watch, "the connection", l.fwd.held(), now)
}

func (l *streamLink) cause(err error) error { return l.live.cause(l.p.toldCause(err)) }

func (l *streamLink) lastWord(c *ioloop.Conn, err error) {
	if h, words, ok := l.p.dropFrame(err, 0); ok && l.live.fault.CompareAndSwap(nil, &err) {
		c.LastWord(&h, words) // its one stream, failing: now or never
	}
}

// Failing implements ioloop.Failer at the coordinator: the link's last
// word, if this rank ends it for a fault it found.
func (l *streamLink) Failing(c *ioloop.Conn, err error) { l.lastWord(c, l.cause(err)) }

// Payload implements ioloop.Handler at the coordinator: a frame routed to
// another worker is read into a pooled buffer, to be forwarded, or, past
// relayPart, in parts, each relayed as it comes (DeliverPart).
func (l *streamLink) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if h.Dst != 0 {
		c.InParts(l.p.t.relayPart())
		return nil
	}
	return l.p.payload(c, laneData, h)
}

// DeliverPart implements ioloop.PartHandler at the coordinator: the part
// from off of a long frame routed to another worker. The first part goes
// on behind a RELAY that announces the frame, each as a PART.
func (l *streamLink) DeliverPart(c *ioloop.Conn, h *frame.Header, off uint64, bb *ioloop.Buffer) {
	t := l.p.t
	if off == 0 {
		l.relaying = l.routable(h)
	}
	if !l.relaying {
		ioloop.PutBuffer(bb)
		return
	}
	dst := t.peer(int(h.Dst) - 1).link.(*streamLink)
	if off == 0 {
		frame.EncodeRelay(&l.relayHdr, h, uint32(l.p.rank))
		rh := frame.Header{Kind: frame.KindRelay, Src: uint32(l.p.rank)}
		dst.conn.Post(&rh, l.relayHdr[:], true) // a lost destination drops it, and its parts
	}
	part := frame.Header{Kind: frame.KindPart, Src: uint32(l.p.rank), Offset: off}
	l.pass(c, dst, &part, bb)
}

// Deliver implements ioloop.Handler at the coordinator.
func (l *streamLink) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	if h.Dst != 0 {
		l.forward(c, h, bb)
		return
	}
	l.p.arrive(c, laneData, h, payload, bb)
}

// Closed implements ioloop.Handler at the coordinator: the worker is lost.
func (l *streamLink) Closed(_ *ioloop.Conn, err error) {
	l.p.closed(l.cause(err))
	l.p.readEnded(laneData, l.cause(err))
}

// forward passes a frame from this link's worker to the worker its Dst
// names: the payload, read once into bb, is written out from bb, which
// the destination's stream returns to the pool. A frame for a worker that
// is gone is dropped; its sender learns of the loss from GONE. A worker
// whose frames wait to be written on past Options.MaxQueuedBytes is
// paused until they are down to half of it.
func (l *streamLink) forward(c *ioloop.Conn, h *frame.Header, bb *ioloop.Buffer) {
	if !l.routable(h) {
		ioloop.PutBuffer(bb)
		return
	}
	out := *h
	out.Dst, out.Src = 0, uint32(l.p.rank)
	l.pass(c, l.p.t.peer(int(h.Dst)-1).link.(*streamLink), &out, bb)
}

// routable reports whether the coordinator can forward h, a frame from
// this link's worker, to the worker its Dst names; it logs why not (at
// most a line per lograte.RepeatEvery for the worker: warns).
func (l *streamLink) routable(h *frame.Header) bool {
	t := l.p.t
	to := int(h.Dst) - 1
	if to <= 0 || to >= t.world || to == l.p.rank || !t.topo.starReady.Load() {
		l.p.warns.Warn(t.opts.Logger, time.Now(), "boltmesh: dropped a frame the coordinator cannot forward", "rank", t.rank, "peer", l.p.rank, "kind", h.Kind, "to", to)
		return false
	}
	return true
}

// pass writes out, a frame from this link's worker with its payload in
// bb, on the stream to dst (a coordinator's every link is a streamLink),
// and pauses the worker's stream c while too much of what it sent waits
// there: each frame counts what it holds while it waits (fwdCost).
func (l *streamLink) pass(c *ioloop.Conn, dst *streamLink, out *frame.Header, bb *ioloop.Buffer) {
	l.fwd.add(fwdCost(len(bb.B)), l.p.t.opts.MaxQueuedBytes, c)
	dst.conn.PostBuffer(out, bb, l.fwd.done)
}

// forwarded accounts a frame with n bytes of payload from the worker
// written on (or dropped) and resumes its stream once the backlog is
// below half the limit.
func (l *streamLink) forwarded(n int) {
	if l.fwd.sub(fwdCost(n), l.p.t.opts.MaxQueuedBytes, l.conn) {
		l.conn.Wake() // not here: the writer's locks may be held
	}
}

// fwdCost is what a frame with an n-byte payload that a coordinator
// forwards holds while it waits to be written on: its pooled buffer (n
// rounded up to a power of two) and its place in the queue, header
// included, which frame.Cost's MsgOverhead covers. Counting the payload
// alone, a worker's frames with short or no payloads (CREDIT, CTS, a
// GET_REQ) would cost the coordinator their queue entries unbounded.
func fwdCost(n int) int64 { return int64(frame.Cost(uint64(n))) }

// fwdCounter counts what a coordinator holds of the frames it forwards
// from one worker that are not yet written on (fwdCost), to pause that
// worker past a limit.
type fwdCounter struct {
	mu     sync.Mutex
	n      int64
	paused bool
	done   func(n int) // the link's forwarded, bound once
}

// add counts n more, and pauses c, the source's stream, past limit. The
// pause and its undoing (sub) are made under mu, so that they stay in the
// order of the counts.
func (f *fwdCounter) add(n, limit int64, c *ioloop.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += n
	if f.n > limit && !f.paused {
		f.paused = true
		c.Pause()
	}
}

// held reports whether the source is paused.
func (f *fwdCounter) held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

// sub counts n done, undoes the pause of c, the source's stream, once
// the count is down to half the limit, and reports whether it did: c is
// then to be read (Look) once the caller holds no lock.
func (f *fwdCounter) sub(n, limit int64, c *ioloop.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n -= n
	if f.paused && f.n <= limit/2 {
		f.paused = false
		c.Unpause()
		return true
	}
	return false
}

// Drained writes the grants this drain's upcalls recorded (credit.go).
func (l *streamLink) Drained(*ioloop.Conn) { l.p.t.writeGrants() }
