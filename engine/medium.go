package engine

import (
	"errors"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/handshake"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
)

// The medium of a connection: how its frames go. Once the HELLOs agree,
// both ends of a handshake run the same steps, in this order, each
// filling its part of the connection's medium; adopt (setup.go) then
// registers what they made. A new medium (an RDMA link, a Thunderbolt DMA
// ring) is one step here, a part of medium, and what adopt does with it.
//
//	neighbourStep  medium.go  ranks of one host: the pair's pipes and memory (on the control stream; internal/link/shm)
//	sealStep       seal.go    the stream's keys, where the link is sealed
var mediumSteps = [...]mediumStep{neighbourStep, sealStep}

// mediumStep is one step of the medium of hc, the handshake with rank r
// on its stream s, from this end (the dialer's or the acceptor's): it
// fills m's part of its own, or leaves it.
type mediumStep func(t *NetTransport, hc *hsConn, r, s int, dialer bool, m *medium) error

// medium is what the steps made for one connection. The zero value is a
// plain TCP stream.
type medium struct {
	pair *linkshm.Pair // neighbours: the pipes, registered before the stream, which then carries nothing
	keys *sealed.Keys  // the stream is sealed with these
}

// meetMedium notes the peer's machine (setup.go) and runs the medium
// steps of hc, the handshake with rank r on its stream s, from this end;
// if one fails, what the steps before it made is released.
func meetMedium(t *NetTransport, hc *hsConn, r, s int, dialer bool) (medium, error) {
	t.noteMachine(r, hc.Theirs)
	var m medium
	for _, step := range mediumSteps {
		if err := step(t, hc, r, s, dialer, &m); err != nil {
			m.release()
			return medium{}, err
		}
	}
	return m, nil
}

// release gives back what the steps made, for a connection that will not
// be adopted.
func (m *medium) release() {
	if m.pair != nil {
		m.pair.Release()
		m.pair = nil
	}
}

// newNeighbours opens this rank's side of its host's neighbour meetings
// (internal/link/shm). With Options.SharedMemory off, in a star, or
// where the host cannot be told, it has no host: every pair stays on TCP.
func newNeighbours(t *NetTransport, star bool) *linkshm.Neighbours {
	ring := t.opts.PipeRing
	if ring == 0 {
		ring = DefaultPipeRing(t.world)
	}
	return linkshm.NewNeighbours(linkshm.NeighboursConfig{
		On: t.opts.SharedMemory == SharedMemoryAuto && !star, HostID: t.opts.HostID,
		Rank: t.rank, World: t.world, Ring: ring, HeapFD: t.heap.FD(), HeapSize: t.heap.Size(),
		Timeout: t.opts.HandshakeTimeout, SingleCopyMin: t.opts.SingleCopyMin, Logger: t.opts.Logger,
	})
}

// neighbourStep is the medium step of neighbours: on a mesh's control
// stream between ranks of one host, the handshake ends with NEIGHBOUR,
// and the pair meets over shared memory (m.pair) or stays on TCP.
func neighbourStep(t *NetTransport, hc *hsConn, r, s int, dialer bool, m *medium) (err error) {
	if s != t.ctlIndex() || !linkshm.Neighbourly(hc.Self.HostID, hc.Theirs.HostID) {
		return nil
	}
	hs := hsNeighbour{hc: hc, rank: r, dialer: dialer}
	if dialer {
		m.pair, err = t.topo.nbr.Dial(hs, r)
		return err
	}
	m.pair, err = t.topo.nbr.Accept(hs, r)
	if errors.Is(err, linkshm.ErrNoMeeting) {
		err = &HandshakeError{Addr: hc.Addr(), Rank: r, Local: true, Reason: err.Error(), Err: ErrProtocol}
	}
	return err
}

// hsNeighbour is the handshake hc with rank, from this end, as the
// neighbour meeting speaks over it.
type hsNeighbour struct {
	hc     *hsConn
	rank   int
	dialer bool
}

// Read reads the next frame of the handshake; its errors name the rank
// (a dialer's) or are the handshake's (an acceptor's: handshake.WrapRemote).
func (h hsNeighbour) Read(kind frame.Kind, flags frame.Flags) (frame.Header, []byte, error) {
	hd, p, err := h.hc.ReadFrame(kind, flags)
	switch {
	case err == nil:
	case h.dialer:
		err = handshake.WithRank(err, h.rank)
	default:
		err = handshake.WrapRemote(h.hc, h.rank, err)
	}
	return hd, p, err
}

// Write writes a frame of the handshake.
func (h hsNeighbour) Write(kind frame.Kind, flags frame.Flags, aux uint32, payload []byte) error {
	return h.hc.Write(kind, flags, aux, payload)
}

// Token is the meeting's token: the MAC of label over the dialer's and
// then the acceptor's HELLO.
func (h hsNeighbour) Token(label string) []byte {
	if h.dialer {
		return h.hc.MAC(label, h.hc.Raw[:], h.hc.Peer[:])
	}
	return h.hc.MAC(label, h.hc.Peer[:], h.hc.Raw[:])
}

// caps is what a peer's link can do besides carry frames, as its medium
// found it when the pair met: one value per peer, filled by the medium
// as the link is adopted (shared memory: usePair, link_mesh.go) and
// never changed after, so that no component asks which medium a link is.
// A new medium (RDMA, a Thunderbolt DMA ring) fills the same fields: a
// remote heap it writes, a peer copy it reads, polls of its completion
// queue that cost a load.
//
// Lock rule: none; a peer's caps are published once (peer.setCaps),
// before its window opens, and read through an atomic pointer.
type caps struct {
	// cheap: a poll of the link costs a load, not a system call (pipes):
	// a spin reads the clock less often and yields less (recv.go).
	cheap bool
	// mailbox is a mailbox shared with the peer (internal/link/shm): a
	// collective exchange's parts and barrier signals without frames.
	mailbox *linkshm.Mailbox
	// heap is the peer's symmetric heap, mapped here: Put and Get copy
	// (putget.go). It is the peer's: unmapped at Close.
	heap *linkshm.MappedHeap
	// copy is the single copy (single_copy.go): whether this rank copies
	// the peer's messages itself (In), whether the peer copies this
	// rank's (Out), and the peer's process.
	copy linkshm.PairCopy
}

// noCaps is a link's caps when its medium found none: a TCP stream's, a
// star's, this rank's own.
var noCaps = &caps{}
