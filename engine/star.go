package engine

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"github.com/valyala/bytebufferpool"
)

// MaxStarWorld is the largest world a star can hold: a routed frame names
// its destination in 16 bits (frame.Header.Dst, rank+1).
const MaxStarWorld = 1<<16 - 1

// CoordinatorListen builds rank 0 of a star of world ranks: it accepts the
// world-1 workers (WorkerDial) on ln, each announcing its rank in HELLO
// and proving the mesh key as in a full mesh, and returns once all have
// joined or Options.DialTimeout passes. Workers need only outbound
// connectivity to the coordinator (NAT, phones, boards behind a router).
//
// Every operation works between any two ranks: frames between workers go
// through the coordinator, which reads each payload once into a pooled
// buffer and writes it on with writev, in arrival order, so that
// per-(source, tag) order holds. A worker that sends faster than its
// destination drains is paused (TCP backpressure) past
// Options.MaxQueuedBytes in flight. When a worker is lost, the coordinator
// tells every other worker, whose operations with it then fail with
// ErrPeerLost. The transport owns ln, as FromListener does.
func CoordinatorListen(world int, ln net.Listener, opts Options) (*NetTransport, error) {
	if ln == nil {
		return nil, &OptionError{"listener", "is nil but the coordinator must accept its workers"}
	}
	if err := checkStar(0, world); err != nil {
		ln.Close()
		return nil, err
	}
	local := 1
	if isLoopback(ln.Addr().String()) {
		local = world // workers dialing a loopback address share this machine
	}
	t, err := newTransport(0, world, opts, local, true)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if world == 1 {
		ln.Close()
	} else { // acceptPeers owns ln
		ctx, cancel := context.WithTimeout(context.Background(), t.opts.DialTimeout)
		err = t.acceptPeers(ctx, ln)
		cancel()
		if err != nil {
			t.Close()
			return nil, err
		}
	}
	if err := t.joined(); err != nil {
		t.Close()
		return nil, err
	}
	t.starReady.Store(true)
	t.startStar()
	t.startHeartbeat()
	return t, nil
}

// startStar tells every worker that the world is complete (a HEARTBEAT
// from the coordinator), and that any worker lost meanwhile is gone.
func (t *NetTransport) startStar() {
	for _, p := range t.peers[1:] {
		h := frame.Header{Kind: frame.KindHeartbeat}
		p.conn.Post(&h, nil, false)
	}
	for _, p := range t.peers[1:] {
		if p.lostErr("") != nil {
			t.announceGone(p)
		}
	}
}

// WorkerDial builds worker rank (1 ≤ rank < world) of a star by dialing
// the coordinator at coordAddr (retrying until Options.DialTimeout), and
// returns once the coordinator reports that every worker has joined. See
// CoordinatorListen.
func WorkerDial(rank, world int, coordAddr string, opts Options) (*NetTransport, error) {
	if err := checkStar(rank, world); err != nil {
		return nil, err
	}
	if rank == 0 {
		return nil, &OptionError{"rank", "is 0, the coordinator's: it listens (CoordinatorListen)"}
	}
	local := 1
	if isLoopback(coordAddr) {
		local = world
	}
	t, err := newTransport(rank, world, opts, local, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DialTimeout)
	defer cancel()
	if err := t.dialPeer(ctx, 0, coordAddr); err != nil {
		t.Close()
		return nil, err
	}
	select {
	case <-t.link.ready:
		for _, p := range t.peers[1:] {
			if p.rank != rank {
				p.openWindow() // through the coordinator, now forwarding
			}
		}
		if err = t.joined(); err == nil {
			t.startHeartbeat()
			return t, nil
		}
	case <-t.lostCh:
		err = t.anyLost("join")
	case <-ctx.Done():
		err = fmt.Errorf("boltmesh: rank %d: the coordinator at %s did not report every worker joined within %v: %w", rank, coordAddr, t.opts.DialTimeout, ctx.Err())
	}
	t.Close()
	return nil, err
}

func checkStar(rank, world int) error {
	switch {
	case world < 1 || world > MaxStarWorld:
		return &OptionError{"world", fmt.Sprintf("size %d out of a star's range [1, %d]", world, MaxStarWorld)}
	case rank < 0 || rank >= world:
		return &UnknownRankError{Rank: rank, NumRanks: world}
	}
	return nil
}

// StarCenter reports whether the transport is a star and, if so, the rank
// of its coordinator, through which every other pair of ranks
// communicates. Collectives use it to pick algorithms that suit a star.
func (t *NetTransport) StarCenter() (center int, ok bool) { return 0, t.star }

// makeStar prepares a star transport before it connects: a worker's
// frames all come through one handler, the coordinator connection's.
func (t *NetTransport) makeStar() {
	t.star = true
	if t.rank == 0 {
		return
	}
	t.link = &starLink{t: t, ready: make(chan struct{})}
}

// routeViaCoordinator sends a worker's frames for every other worker
// through the coordinator connection c, addressed by Dst. It runs as c is
// registered (adopt), before any frame is read from it.
func (t *NetTransport) routeViaCoordinator(c *ioloop.Conn) {
	for _, p := range t.peers[1:] {
		if p.rank != t.rank {
			p.conn, p.via = c, uint16(p.rank+1)
		}
	}
}

// announceGone tells every other worker that p is gone (the coordinator
// lost it); frames it forwarded from p before are ahead of the notice.
func (t *NetTransport) announceGone(p *peer) {
	if !t.star || t.rank != 0 || !t.starReady.Load() || t.closed.Load() {
		return
	}
	for _, q := range t.peers[1:] {
		if q != p {
			h := frame.Header{Kind: frame.KindGone, Src: uint32(p.rank)}
			q.conn.Post(&h, nil, false)
		}
	}
}

// forward passes a frame from worker p to the worker its Dst names: the
// payload, read once into bb, is written out from bb, which the
// destination's connection returns to the pool. A frame for a worker that
// is gone is dropped; its sender learns of the loss from GONE.
func (p *peer) forward(c *ioloop.Conn, h *frame.Header, bb *bytebufferpool.ByteBuffer) {
	t := p.t
	to := int(h.Dst) - 1
	if !t.star || t.rank != 0 {
		putBuffer(bb)
		p.violation(c, fmt.Errorf("%w: a routed %v frame (Dst %d) to a rank that is not a star's coordinator", ErrProtocol, h.Kind, h.Dst))
		return
	}
	if to <= 0 || to >= t.world || to == p.rank || !t.starReady.Load() {
		ioloop.PutBuffer(bb)
		t.opts.Logger.Warn("boltmesh: dropped a frame the coordinator cannot forward", "rank", p.rank, "kind", h.Kind, "to", to)
		return
	}
	out := *h
	out.Dst, out.Src = 0, uint32(p.rank)
	if p.fwd.add(int64(len(bb.B)), t.opts.MaxQueuedBytes) {
		c.Pause()
	}
	t.peers[to].conn.PostBuffer(&out, bb, p.fwd.done)
}

// forwarded accounts n bytes from p written on (or dropped) and resumes
// p's connection once the backlog is below half the limit.
func (p *peer) forwarded(n int) {
	if p.fwd.sub(int64(n), p.t.opts.MaxQueuedBytes) {
		go p.conn.Resume() // not here: the writer's locks may be held
	}
}

// fwdCounter counts the bytes a coordinator forwards from one worker that
// are not yet written on, to pause that worker past a limit.
type fwdCounter struct {
	mu     sync.Mutex
	n      int64
	paused bool
	done   func(n int) // the peer's forwarded, bound once
}

// add counts n more bytes and reports whether the source must pause.
func (f *fwdCounter) add(n, limit int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += n
	if f.n > limit && !f.paused {
		f.paused = true
		return true
	}
	return false
}

// held reports whether the source is paused.
func (f *fwdCounter) held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

// sub counts n bytes done and reports whether the source must resume.
func (f *fwdCounter) sub(n, limit int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n -= n
	if f.paused && f.n <= limit/2 {
		f.paused = false
		return true
	}
	return false
}

// starLink is the handler of a star worker's one connection: it hands
// each frame to the peer named by its source, and fails every peer when
// the coordinator is lost.
type starLink struct {
	t     *NetTransport
	ready chan struct{} // closed when the coordinator reports the world complete
	once  sync.Once
}

var _ ioloop.Handler = (*starLink)(nil)

// from returns the peer a frame comes from, or nil for a frame no
// coordinator may send.
func (l *starLink) from(h *frame.Header) *peer {
	if h.Dst != 0 || int(h.Src) >= l.t.world || int(h.Src) == l.t.rank {
		return nil
	}
	return l.t.peers[h.Src]
}

// Payload implements ioloop.Handler.
func (l *starLink) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if p := l.from(h); p != nil && h.Kind != frame.KindGone && h.Kind != frame.KindHeartbeat {
		return p.Payload(c, h)
	}
	if h.Length > 0 {
		c.Discard() // Deliver drops the connection
	}
	return nil
}

// Deliver implements ioloop.Handler.
func (l *starLink) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *bytebufferpool.ByteBuffer) {
	p := l.from(h)
	switch {
	case p == nil:
		putBuffer(bb)
		l.t.opts.Logger.Warn("boltmesh: the coordinator sent a frame with a bad source or destination; dropping the connection", "src", h.Src, "dst", h.Dst, "kind", h.Kind)
		c.Close()
	case h.Kind == frame.KindHeartbeat:
		putBuffer(bb)
		if p.rank == 0 {
			l.once.Do(func() { close(l.ready) })
		}
	case h.Kind == frame.KindGone:
		putBuffer(bb)
		if p.rank != 0 {
			p.lose(errGone)
		}
	default:
		p.Deliver(c, h, payload, bb)
	}
}

// Closed implements ioloop.Handler: without the coordinator, every peer
// is lost.
func (l *starLink) Closed(c *ioloop.Conn, err error) {
	for _, p := range l.t.peers {
		if p.rank != l.t.rank {
			p.Closed(c, err)
		}
	}
}
