package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/shm"
)

// Neighbours: ranks on one host (their HELLOs carry the same HostID) end
// their control stream's handshake with NEIGHBOUR, meet over a Unix
// socket (internal/link/shm's meeting: ListenMeetings, Meet) and from
// then on move their frames through two pipes in shared memory
// (linkshm.Open, ioloop.Loop.RegisterStream), one per lane, while each
// maps the other's heap for Put and Get (frame/spec.md, "Neighbours"). The
// acceptor of the pair (the lower rank) offers its meeting point in its
// NEIGHBOUR; the dialer meets it there and says in its answer which way
// the pair goes. A pair that cannot meet (no listener, a refused
// descriptor, another user) stays on TCP, and says why once in the log.
//
// Lock rule: none of its own; the meeting point has its own (linkshm), and
// the rest is set before the mesh forms.
type neighbours struct {
	t     *NetTransport
	host  [frame.HostIDSize]byte // this rank's host, as its HELLOs say; zero: no neighbours
	meet  *linkshm.Meetings      // where higher ranks on this host meet this one; nil if none
	probe *linkshm.Probe         // what neighbours read to learn that they may copy from this rank
	warn  sync.Once              // the first fallback to TCP is logged
	why   sync.Once              // the first refusal of a single copy is logged
}

// PipeRingBudget is the shared memory, in bytes of data rings, that
// DefaultPipeRing lets one rank's pipes to its possible neighbours take
// in one direction: 16 MiB (about 40 MiB with both directions and the
// control rings).
const PipeRingBudget = 16 << 20

// DefaultPipeRing is a pair's data ring (Options.PipeRing left 0) in a
// world of world ranks: PipeRingBudget over the world's other ranks,
// any of which may be a neighbour, rounded down to a power of two and
// kept within [64 KiB, 1 MiB]: 1 MiB up to 17 ranks, 512 KiB up to 33,
// 256 KiB up to 65, 128 KiB up to 129, then 64 KiB. Every pair of a host
// has two rings, so their memory grows with the square of the host's
// ranks: 32 ranks on one host take 1.2 GiB with 1 MiB rings, 620 MiB
// with 512 KiB. Smaller rings cost a pair bandwidth (bench/RESULTS.md),
// so worlds of up to 17 keep 1 MiB.
func DefaultPipeRing(world int) int {
	ring := 1 << 20
	for ring > 64<<10 && ring*(world-1) > PipeRingBudget {
		ring /= 2
	}
	return ring
}

// labelNeighbour is the HMAC label of a meeting's token.
const labelNeighbour = "boltmesh neighbour"

// newNeighbours finds this rank's host and, if it accepts higher ranks,
// opens its meeting point. With Options.SharedMemory off, in a star, or
// where the host cannot be told, it has no host: every pair stays on TCP.
func newNeighbours(t *NetTransport, star bool) *neighbours {
	n := &neighbours{t: t}
	if t.opts.SharedMemory != SharedMemoryAuto || star || t.world < 2 {
		return n
	}
	n.probe = linkshm.NewProbe(t.opts.SingleCopyMin, n.refusedCopy)
	host, err := shm.HostID(t.opts.HostID)
	if err != nil {
		n.fallBack(-1, fmt.Errorf("this host's identity: %w", err))
		return n
	}
	n.host = host
	if t.rank < t.world-1 {
		if n.meet, err = linkshm.ListenMeetings(n.config(), n.fallBack); err != nil {
			n.fallBack(-1, fmt.Errorf("listening for neighbours: %w", err))
			return n
		}
	}
	return n
}

// config is what this rank brings to its meetings.
func (n *neighbours) config() linkshm.MeetConfig {
	ring := n.t.opts.PipeRing
	if ring == 0 {
		ring = DefaultPipeRing(n.t.world)
	}
	return linkshm.MeetConfig{Rank: n.t.rank, HeapFD: n.t.heap.FD(), HeapSize: n.t.heap.Size(), Ring: ring,
		Timeout: n.t.opts.HandshakeTimeout, Probe: n.probe}
}

// fallBack logs, once per transport, that a pair on one host stays on TCP.
func (n *neighbours) fallBack(rank int, why error) {
	n.warn.Do(func() {
		n.t.opts.Logger.Warn("boltmesh: ranks on one host stay on TCP (logged once)", "rank", n.t.rank, "peer", rank, "err", why)
	})
}

// refusedCopy logs, once per transport, that the kernel refuses this rank
// a copy from a neighbour's memory: large messages go through the rings.
func (n *neighbours) refusedCopy(rank int, err error) {
	n.why.Do(func() {
		n.t.opts.Logger.Info("boltmesh: large messages between neighbours go through the rings, not by single copy (logged once)", "rank", n.t.rank, "peer", rank, "err", err)
	})
}

// close stops meeting: the listener closes and every meeting not taken
// is released. It runs when the mesh has formed, and at Close.
func (n *neighbours) close() {
	if n.meet != nil {
		n.meet.Close()
	}
}

// neighbourStep is the medium step of neighbours (medium.go): on a
// mesh's control stream between ranks of one host, the handshake ends
// with NEIGHBOUR, and the pair meets over shared memory (m.pair) or
// stays on TCP.
func neighbourStep(t *NetTransport, hc *hsConn, r, s int, dialer bool, m *medium) (err error) {
	switch {
	case !hc.neighbourly(t, s):
	case dialer:
		m.pair, err = hc.dialNeighbour(t.topo.nbr, r)
	default:
		m.pair, err = hc.acceptNeighbour(t.topo.nbr, r)
	}
	return err
}

// neighbourly reports whether the handshake hc ends with NEIGHBOUR: a
// mesh's control stream between ranks whose HELLOs name one host.
func (hc *hsConn) neighbourly(t *NetTransport, stream int) bool {
	var zero [frame.HostIDSize]byte
	return stream == t.ctlIndex() && hc.self.HostID != zero && hc.theirs.HostID == hc.self.HostID
}

// dialNeighbour ends the control stream's handshake hc with rank as the
// dialer: the acceptor's NEIGHBOUR read, the meeting tried, the choice
// sent. It returns what the pair shares, or nil for TCP.
func (hc *hsConn) dialNeighbour(n *neighbours, rank int) (*linkshm.Pair, error) {
	addr, err := hc.read(frame.KindNeighbour, 0)
	if err != nil {
		return nil, withRank(err, rank)
	}
	var pair *linkshm.Pair
	if len(addr) == 0 {
		n.fallBack(rank, errors.New("the neighbour offers no meeting point"))
	} else if pair, err = linkshm.Meet(n.config(), rank, string(addr), hc.mac(labelNeighbour, hc.raw[:], hc.peer[:])); err != nil {
		n.fallBack(rank, err)
	}
	choice := frame.NeighbourTCP
	if pair != nil {
		choice = frame.NeighbourPipes
	}
	if err := hc.write(frame.KindNeighbour, frame.FlagReply, choice, nil); err != nil {
		if pair != nil {
			pair.Release()
		}
		return nil, err
	}
	return pair, nil
}

// acceptNeighbour ends the control stream's handshake hc with the dialer
// rank as the acceptor: its meeting point offered, the dialer's choice
// read. It returns what the pair shares, or nil for TCP.
func (hc *hsConn) acceptNeighbour(n *neighbours, rank int) (*linkshm.Pair, error) {
	var addr []byte
	var o *linkshm.Offer
	if n.meet != nil {
		var tok [32]byte
		copy(tok[:], hc.mac(labelNeighbour, hc.peer[:], hc.raw[:]))
		o = n.meet.Expect(tok, rank)
		addr = []byte(n.meet.Addr())
	}
	cancel := func() {
		if n.meet != nil {
			n.meet.Cancel(o)
		}
	}
	if err := hc.write(frame.KindNeighbour, 0, 0, addr); err != nil {
		cancel()
		return nil, err
	}
	h, _, err := hc.readFrame(frame.KindNeighbour, frame.FlagReply)
	if err != nil {
		cancel()
		return nil, wrapRemote(hc, rank, err)
	}
	if h.Aux != frame.NeighbourPipes {
		cancel()
		return nil, nil
	}
	var pair *linkshm.Pair
	if o != nil {
		// The dialer chose pipes once it had this rank's answer, which the
		// meeting sends just before it ends.
		pair = n.meet.Await(o, n.t.opts.HandshakeTimeout)
	}
	if pair == nil {
		cancel()
		return nil, &HandshakeError{Addr: hc.addr(), Rank: rank, Local: true, Reason: "chose shared memory without meeting", Err: ErrProtocol}
	}
	return pair, nil
}
