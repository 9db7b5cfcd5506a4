package engine

import (
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// Topology is how a transport's world is joined, as it was formed: it
// does not change while the transport lives.
type Topology struct {
	// Star is true for a star (CoordinatorListen, WorkerDial): every
	// frame between two workers passes through the coordinator, Center.
	Star bool
	// Center is a star's coordinator (rank 0), or -1 in a full mesh.
	Center int
	// Loopback is true when every rank is reached over this machine's
	// loopback interface (all ranks local), as opposed to a real link.
	// Collectives size their pieces by it.
	Loopback bool
	// Neighbours are, in rank order, the ranks whose frames go through
	// shared memory (Options.SharedMemory): the ranks on this host that
	// this rank met. Both ends of a pair agree. The others are reached
	// over TCP.
	Neighbours []int
	// SingleCopy are the neighbours whose large messages this rank copies
	// straight from their memory (Options.SingleCopyMin; Linux's
	// process_vm_readv), as their meeting found it; from the other
	// neighbours they come through the pipes' rings.
	SingleCopy []int
	// Sealed are, in rank order, the peers whose links are sealed
	// (Options.Seal), and Cipher their AEAD ("aes-256-gcm" or
	// "chacha20-poly1305"; "mixed" if they differ; "" with none sealed).
	Sealed []int
	Cipher string
	// Hosts numbers, by rank, the host each rank runs on, as their
	// HELLOs name it (Options.HostID): ranks with the same number share a
	// host, numbered from 0 in the order of each host's lowest rank. A
	// rank that names no host (shared memory off) is a host of its own.
	// Every rank of a mesh finds the same Hosts, so collectives may order
	// their steps by it. Nil in a star, whose workers never meet.
	Hosts []int
}

// Topology returns how the transport's world is joined. Neighbours is
// the caller's, as is SingleCopy.
func (t *NetTransport) Topology() Topology {
	top := Topology{Star: t.topo.star, Center: -1, Loopback: t.topo.loopback}
	if top.Star {
		top.Center = 0
	} else {
		top.Hosts = t.hosts()
	}
	for _, p := range t.view().peers {
		if c := sealed.Cipher(p.seal.Load()); c != 0 {
			top.Sealed = append(top.Sealed, p.rank)
			switch name := c.String(); top.Cipher {
			case "":
				top.Cipher = name
			case name:
			default:
				top.Cipher = "mixed"
			}
		}
		if p.can().mailbox != nil {
			top.Neighbours = append(top.Neighbours, p.rank)
			if p.can().copy.In {
				top.SingleCopy = append(top.SingleCopy, p.rank)
			}
		}
	}
	return top
}

// hosts numbers the ranks' hosts (Topology.Hosts) from the HostIDs of
// this rank's HELLOs and its peers'.
func (t *NetTransport) hosts() []int {
	hosts := make([]int, t.world)
	seen := make(map[[frame.HostIDSize]byte]int)
	next := 0
	for r := range hosts {
		id := t.topo.hostIDs[r].Load()
		if r == t.rank && t.topo.nbr.host != ([frame.HostIDSize]byte{}) {
			id = &t.topo.nbr.host
		}
		n, ok := 0, false
		if id != nil {
			n, ok = seen[*id]
		}
		if !ok {
			n, next = next, next+1
			if id != nil {
				seen[*id] = n
			}
		}
		hosts[r] = n
	}
	return hosts
}
