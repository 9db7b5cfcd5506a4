package engine

import (
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
)

// The medium of a connection: how its frames go. Once the HELLOs agree,
// both ends of a handshake run the same steps, in this order, each
// filling its part of the connection's medium; adopt (setup.go) then
// registers what they made. A new medium (an RDMA link, a Thunderbolt DMA
// ring) is one step here, a part of medium, and what adopt does with it.
//
//	neighbourStep  neighbour.go  ranks of one host: the pair's pipes and memory (on the control stream)
//	sealStep       seal.go       the stream's keys, where the link is sealed
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
	t.noteMachine(r, hc.theirs)
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
