package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/heap"
	"github.com/boltmesh/boltmesh/internal/handshake"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/link/tcp"
	"github.com/boltmesh/boltmesh/internal/shm"
	"github.com/boltmesh/boltmesh/internal/spin"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Bind listens on peers[rank] and builds the mesh; see FromListener.
func Bind(rank, world int, peers []string, opts Options) (*NetTransport, error) {
	ln, err := listenAt(rank, peers)
	if err != nil {
		return nil, err
	}
	return FromListener(rank, world, ln, peers, opts)
}

// listenAt listens on rank's address in peers.
func listenAt(rank int, peers []string) (net.Listener, error) {
	if rank < 0 || rank >= len(peers) {
		return nil, &UnknownRankError{Rank: rank, NumRanks: len(peers)}
	}
	return net.Listen("tcp", peers[rank])
}

// FromListener builds a full mesh: peers[r] is rank r's address; this rank
// dials every lower rank (retrying with backoff until Options.DialTimeout)
// and accepts every higher rank on ln, whose address is peers[rank].
// Passing listeners bound to ephemeral ports in advance makes multi-rank
// tests race-free. The transport owns ln: it closes it when construction
// fails, and otherwise Options.LateJoinWindow after the mesh formed (or at
// Close, if sooner), answering late dialers until then. Connections that
// fail the handshake are refused, reported through Options.OnReject (each)
// and Options.Logger (a few), and do not disturb the rest of the mesh; the
// accept loop outlives errors such as running out of file descriptors.
func FromListener(rank, world int, ln net.Listener, peers []string, opts Options) (*NetTransport, error) {
	if err := checkWorld(rank, world, peers, ln); err != nil {
		closeListener(ln)
		return nil, err
	}
	t, err := newTransport(rank, world, opts, localRanks(peers, rank), false)
	if err != nil {
		closeListener(ln)
		return nil, err
	}
	if err = t.connect(ln, peers); err == nil {
		err = t.joined()
	}
	if err == nil {
		t.settleCrowding()
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	t.startHeartbeat()
	return t, nil
}

// joined waits, for at most Options.DialTimeout, until every peer has
// granted this rank its flow-control window.
func (t *NetTransport) joined() error {
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DialTimeout)
	defer cancel()
	return t.awaitWindows(ctx)
}

// closeListener closes ln unless it is nil.
func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// newTransport builds a transport with its heap and event loop, not yet
// connected. local is how many ranks certainly share this machine.
func newTransport(rank, world int, opts Options, local int, star bool) (*NetTransport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkCongestion(o.Congestion); err != nil {
		return nil, err
	}
	crowded := opts.Spin == 0 && local > spin.Available()
	if crowded {
		o.Spin = spin.CrowdedSpin // oversubscribed: spins give the core up between polls
	}
	if star {
		o.Streams = 1 // a star's links carry every pair's traffic: no striping
	}
	t := newNetTransport(rank, world, o)
	t.topo.loopback = local >= world
	t.topo.crowded.Store(crowded)
	t.topo.spin.Store(int64(o.Spin))
	t.topo.defaultSpin = opts.Spin == 0
	t.topo.sealCrew = sealCrew(spin.Available(), local)
	t.topo.sameMachine = make([]atomic.Bool, world)
	t.topo.hostIDs = make([]atomic.Pointer[[frame.HostIDSize]byte], world)
	if m, err := shm.MachineID(); err == nil {
		t.topo.machine = m
	}
	t.makeLinks(star)
	if t.heap, err = heap.New(o.HeapSize); err != nil {
		return nil, err
	}
	t.topo.nbr = newNeighbours(t, star)
	loopSpin := max(o.Spin, 0) // a full send's and the hot loop's spins, which do not yield the core
	if crowded {
		loopSpin = 0
	}
	if t.loop, err = ioloop.New(ioloop.Options{MaxFrame: o.MaxFrame, Spin: loopSpin, MaxPosted: maxPosted(o.MaxQueuedBytes)}); err != nil {
		t.topo.nbr.Close()
		t.heap.Close()
		return nil, err
	}
	return t, nil
}

// settleCrowding makes this rank wait as on a crowded machine (as
// newTransport does from the loopback addresses) if the peers whose
// HELLOs named this rank's machine, and this rank, outnumber its cores:
// ranks in network namespaces or containers of one kernel share its
// cores though their addresses are not loopback ones. It runs once the
// mesh has formed, before the transport is returned; an explicit
// Options.Spin is kept.
func (t *NetTransport) settleCrowding() { t.settleCrowdingOn(spin.Available()) }

// settleCrowdingOn is settleCrowding on a machine of cpus cores.
func (t *NetTransport) settleCrowdingOn(cpus int) {
	if !t.topo.defaultSpin || t.topo.crowded.Load() {
		return
	}
	n := 1
	for r := range t.topo.sameMachine {
		if r != t.rank && t.topo.sameMachine[r].Load() {
			n++
		}
	}
	if n <= cpus {
		return
	}
	t.topo.spin.Store(int64(spin.CrowdedSpin))
	t.topo.crowded.Store(true)
	t.loop.SetSpin(0)
}

// noteMachine records whether the peer rank, whose HELLO is theirs, runs
// on this rank's machine, and the host it names (Topology.Hosts).
func (t *NetTransport) noteMachine(rank int, theirs frame.Hello) {
	if rank < 0 || rank >= len(t.topo.sameMachine) {
		return
	}
	var zero [frame.MachineIDSize]byte
	if t.topo.machine != zero && theirs.Machine == t.topo.machine {
		t.topo.sameMachine[rank].Store(true)
	}
	if theirs.HostID != ([frame.HostIDSize]byte{}) {
		host := theirs.HostID
		t.topo.hostIDs[rank].Store(&host)
	}
}

// localRanks counts the ranks whose address is a loopback one (this rank
// included): ranks that certainly share this machine's cores.
func localRanks(peers []string, rank int) int {
	n := 1
	for r, a := range peers {
		if r == rank {
			continue
		}
		if isLoopback(a) {
			n++
		}
	}
	return n
}

// isLoopback reports whether addr (host:port) names this machine's
// loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && (host == "localhost" || ip != nil && ip.IsLoopback())
}

func checkWorld(rank, world int, peers []string, ln net.Listener) error {
	switch {
	case world < 1 || world > 1<<20:
		return &OptionError{"world", fmt.Sprintf("size %d out of range", world)}
	case rank < 0 || rank >= world:
		return &UnknownRankError{Rank: rank, NumRanks: world}
	case len(peers) != world:
		return &OptionError{"peers", fmt.Sprintf("has %d addresses for a world of %d", len(peers), world)}
	case ln == nil && rank < world-1:
		return &OptionError{"listener", fmt.Sprintf("is nil but rank %d must accept higher ranks", rank)}
	}
	return nil
}

// connect dials the lower ranks and accepts the higher ones concurrently.
// acceptPeers owns ln; the last rank, which accepts nobody, closes it.
func (t *NetTransport) connect(ln net.Listener, peers []string) error {
	if t.rank == t.world-1 {
		closeListener(ln)
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DialTimeout)
	defer cancel()
	errs := make(chan error, t.rank+1)
	var wg sync.WaitGroup
	for r := 0; r < t.rank; r++ {
		wg.Go(func() { errs <- t.dialPeer(ctx, r, peers[r]) })
	}
	if t.rank < t.world-1 {
		wg.Go(func() { errs <- t.acceptPeers(ctx, ln) })
	}
	var first error
	for range t.rank + min(1, t.world-1-t.rank) {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
			closeListener(ln)
		}
	}
	wg.Wait()
	t.topo.nbr.Close() // formed, or failed: nobody else comes to meet
	return first
}

// dialPeer connects to rank r, every stream of the pair, retrying refused
// or failed attempts with backoff until ctx ends; a handshake refusal by
// the peer is final.
func (t *NetTransport) dialPeer(ctx context.Context, r int, addr string) error {
	t.warnIfKeyless(addr)
	for s := range t.streams() {
		if err := t.dialStream(ctx, r, s, addr); err != nil {
			return err
		}
	}
	return nil
}

// dialStream connects stream s to rank r.
func (t *NetTransport) dialStream(ctx context.Context, r, s int, addr string) error {
	backoff := 5 * time.Millisecond
	var last error
	for {
		nc, err := (&net.Dialer{KeepAlive: -1}).DialContext(ctx, "tcp", addr)
		if err == nil {
			err = t.handshakeDial(nc, r, s)
			var he *HandshakeError
			if err == nil || errors.As(err, &he) {
				return err
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("boltmesh: rank %d could not reach rank %d at %s within %v: %w", t.rank, r, addr, t.opts.DialTimeout, last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// streams is the number of connections to each peer: in a full mesh the
// Options.Streams data streams and the control stream (meshLink, index
// Options.Streams); in a star one.
func (t *NetTransport) streams() int {
	if t.topo.star {
		return 1
	}
	return t.opts.Streams + 1
}

// ctlIndex is the control stream's index among a peer's connections, or
// -1 in a star.
func (t *NetTransport) ctlIndex() int {
	if t.topo.star {
		return -1
	}
	return t.opts.Streams
}

// hsConn is the handshake of one connection (internal/handshake).
type hsConn = handshake.Conn

// newHsConn starts the handshake of nc, this rank's stream number stream
// of the pair: its HELLO says what this transport is (world, rank, mesh,
// topology, streams, host and machine, sealing) and its deadline is
// Options.HandshakeTimeout.
func newHsConn(nc net.Conn, t *NetTransport, stream int) (*hsConn, error) {
	o := &t.opts
	self := frame.Hello{Version: frame.Version, World: uint32(t.world), Rank: uint32(t.rank), MeshID: o.meshID()}
	if t.topo.star {
		self.Topology = frame.TopologyStar
	}
	self.Stream, self.Streams = uint16(stream), uint16(o.Streams)
	self.HostID = t.topo.nbr.Host()
	self.Machine = t.topo.machine
	self.Seal, self.Cipher = o.sealFlags(nc.RemoteAddr().String()), uint8(sealed.Preferred())
	return handshake.New(nc, o.MeshKey, self, o.HandshakeTimeout)
}

func (t *NetTransport) handshakeDial(nc net.Conn, r, s int) error {
	hc, err := newHsConn(nc, t, s)
	if err == nil {
		err = hc.Dial(r)
	}
	var m medium
	if err == nil {
		m, err = meetMedium(t, hc, r, s, true)
	}
	if err == nil {
		return t.adopt(nc, r, s, m)
	}
	nc.Close()
	return err
}

// adopt registers with the event loop, as stream s of rank r's
// connection, what its handshake made: first a medium's lanes of their own
// (m.pair: neighbours' pipes, which the link then uses, the stream idle),
// then the socket, tuned and taken from the net package (tcp.Adopt), and
// sealed with m.keys if the link is sealed (seal.go). The link names the
// stream's handler and attaches the Conn (link.handler, link.attach), and
// the peer's window opens once the link is up (openWindow).
func (t *NetTransport) adopt(nc net.Conn, r, s int, m medium) error {
	defer nc.Close()
	p := t.peer(r)
	if m.pair != nil {
		if err := p.link.usePair(m.pair); err != nil {
			return err
		}
	}
	stream, err := tcp.Adopt(nc, t.opts.SocketBuffer, t.opts.setCongestion) // heartbeats on every stream watch the link (link_live.go)
	if err != nil {
		return err
	}
	if hook := testHookStream.Load(); hook != nil {
		stream = (*hook)(t, r, s, stream)
	}
	if m.keys != nil {
		if stream, err = sealed.New(stream, *m.keys, t.sealOptions()); err != nil {
			return err
		}
		p.seal.Store(uint32(m.keys.Cipher))
	}
	open := false
	_, err = t.loop.RegisterStream(stream, r, p.link.handler(s), func(c *ioloop.Conn) {
		ready := p.link.attach(s, c)
		p.mu.Lock()
		defer p.mu.Unlock()
		open = ready && !p.windowOpen
		p.windowOpen = p.windowOpen || open
	})
	if err != nil {
		return err
	}
	if open {
		p.openWindow() // once the control stream it goes on is up too
	}
	return nil
}

// testHookStream, when set by a test, may wrap the Stream of every
// connection adopt registers: the transport, the peer's rank and the
// stream's index (the control stream's is Options.Streams).
var testHookStream atomic.Pointer[func(t *NetTransport, rank, stream int, s ioloop.Stream) ioloop.Stream]

// awaitWindows waits until every peer has granted its window, or ctx
// ends: a transport is returned only once it can send to every peer
// without a first wait.
func (t *NetTransport) awaitWindows(ctx context.Context) error {
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		if _, err := p.window(ctx.Done(), "join"); err != nil {
			if errors.Is(err, ioloop.ErrCanceled) {
				return fmt.Errorf("boltmesh: rank %d: rank %d granted no flow-control window within %v: %w", t.rank, p.rank, t.opts.DialTimeout, ctx.Err())
			}
			return err
		}
	}
	return nil
}

// sealOptions returns the options sealed links take.
func (t *NetTransport) sealOptions() sealed.Options {
	if o := testSealOptions.Load(); o != nil {
		return *o
	}
	return sealed.Options{Crew: t.topo.sealCrew}
}

// noKeyWarning is logged once by a transport without a mesh key that
// listens on, or dials, anything but loopback.
const noKeyWarning = "boltmesh: NO MESH KEY: any host that can reach this rank can join the mesh as a rank, forge PUTs, read every heap and see control messages. " +
	"Give every rank the same key: Options.MeshKey, the BOLTMESH_KEY environment variable, or the CLI's --key-file FILE (boltmesh keygen writes one)"

// keylessExposed reports whether a rank with mesh key key that listens
// at or dials addr (host:port) is open to strangers: it has no key and
// addr is not this machine's loopback (a wildcard address such as
// 0.0.0.0 or :7000 listens on every interface).
func keylessExposed(key []byte, addr string) bool {
	return len(key) == 0 && !isLoopback(addr)
}

// warnIfKeyless logs noKeyWarning, once per transport, if addr exposes a
// transport that has no key.
func (t *NetTransport) warnIfKeyless(addr string) {
	if keylessExposed(t.opts.MeshKey, addr) {
		t.door.keyWarn.Do(func() { t.opts.Logger.Warn(noKeyWarning, "rank", t.rank, "reachable_at", addr) })
	}
}

// makeLinks gives every peer but this rank itself the link its topology
// joins it by, not up yet: the streams come as the mesh forms (adopt).
func (t *NetTransport) makeLinks(star bool) {
	if star {
		t.makeStar()
	}
	for _, p := range t.view().Peers {
		switch {
		case p.rank == t.rank:
		case !star:
			p.link = newMeshLink(p, t.opts.Streams)
		case t.rank == 0 || p.rank == 0:
			p.link = newStreamLink(p)
		default:
			p.link = &routeLink{via: uint16(p.rank + 1)}
		}
	}
}
