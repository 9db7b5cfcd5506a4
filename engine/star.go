package engine

import (
	"context"
	"fmt"
	"net"

	"github.com/boltmesh/boltmesh/frame"
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
// per-(source, tag) order holds; a payload longer than 256 KiB it relays
// in parts, each written on as it is read, so that it never holds one
// whole. A worker that sends faster than its
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
	t.settleCrowding()
	t.topo.starReady.Store(true)
	t.startStar()
	t.startHeartbeat()
	return t, nil
}

// startStar tells every worker that the world is complete (a HEARTBEAT
// from the coordinator), and that any worker lost meanwhile is gone.
func (t *NetTransport) startStar() {
	for _, p := range t.view().Peers[1:] {
		h := frame.Header{Kind: frame.KindHeartbeat}
		p.link.post(laneCtl, h, nil, false)
	}
	for _, p := range t.view().Peers[1:] {
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
	if err = t.awaitJoin(ctx, coordAddr); err == nil {
		t.startHeartbeat()
		return t, nil
	}
	t.Close()
	return nil, err
}

// awaitJoin waits, on a star worker, for the coordinator to report every
// worker joined, and opens the windows of the other workers. It fails if a
// peer is lost meanwhile, or ctx ends first.
func (t *NetTransport) awaitJoin(ctx context.Context, coordAddr string) error {
	for cur := t.view(); ; cur = t.view() {
		if err := lostErr(cur, "join"); err != nil {
			return err
		}
		select {
		case <-t.topo.hub.ready:
			for _, p := range cur.Peers[1:] {
				if p.rank != t.rank {
					p.openWindow() // through the coordinator, now forwarding
				}
			}
			return t.joined()
		case <-cur.Next:
		case <-ctx.Done():
			return fmt.Errorf("boltmesh: rank %d: the coordinator at %s did not report every worker joined within %v: %w", t.rank, coordAddr, t.opts.DialTimeout, ctx.Err())
		}
	}
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

// makeStar prepares a star transport before it connects: a worker's
// frames all come through one handler, the hub of its coordinator stream.
func (t *NetTransport) makeStar() {
	t.topo.star = true
	if t.rank == 0 {
		return
	}
	t.topo.hub = &hub{t: t, ready: make(chan struct{})}
}

// announceGone tells every other worker that p is gone (the coordinator
// lost it); frames it forwarded from p before are ahead of the notice.
func (t *NetTransport) announceGone(p *peer) {
	if !t.topo.star || t.rank != 0 || !t.topo.starReady.Load() || t.closed.Load() {
		return
	}
	for _, q := range t.view().Peers[1:] {
		if q != p {
			h := frame.Header{Kind: frame.KindGone, Src: uint32(p.rank)}
			q.link.post(laneCtl, h, nil, false)
		}
	}
}

// relayPart is the part size this coordinator relays in: relayPart, or a
// test's.
func (t *NetTransport) relayPart() int {
	if t.opts.relayPart > 0 {
		return t.opts.relayPart
	}
	return relayPart
}
