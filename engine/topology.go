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
	// Links are this rank's links, in rank order: one per peer, each as
	// its medium was found when the pair met.
	Links []Link
	// Hosts numbers, by rank, the host each rank runs on, as their
	// HELLOs name it (Options.HostID): ranks with the same number share a
	// host, numbered from 0 in the order of each host's lowest rank. A
	// rank that names no host (shared memory off) is a host of its own.
	// Every rank of a mesh finds the same Hosts, so collectives may order
	// their steps by it. Nil in a star, whose workers never meet.
	Hosts []int
}

// Link is one of this rank's links: how its frames go.
type Link struct {
	Rank int // the peer
	// Medium is MediumShm for pipes in shared memory between ranks of
	// one host (Options.SharedMemory; the peer is a neighbour),
	// MediumRelay for a star worker's peer other than the coordinator
	// (its frames pass through it), else MediumTCP.
	Medium string
	// Cipher is the AEAD its streams are sealed with (Options.Seal):
	// "aes-256-gcm" or "chacha20-poly1305"; "" when they are not.
	Cipher string
	// SingleCopy: this rank copies the peer's large messages straight
	// from its memory (Options.SingleCopyMin; Linux's process_vm_readv),
	// as the pair's meeting found it; otherwise they come through the
	// pipes' rings (MediumShm) or the sockets.
	SingleCopy bool
}

// The media of a Link.
const (
	MediumTCP   = "tcp"   // TCP streams, sealed or not
	MediumShm   = "shm"   // pipes in shared memory
	MediumRelay = "relay" // through a star's coordinator
)

// Sealed reports whether the link's streams are sealed.
func (l Link) Sealed() bool { return l.Cipher != "" }

// Neighbours returns, in rank order, the ranks whose links are in shared
// memory (MediumShm): the ranks on this host that this rank met. Both
// ends of a pair agree.
func (t Topology) Neighbours() []int {
	return t.ranks(func(l Link) bool { return l.Medium == MediumShm })
}

// SingleCopy returns, in rank order, the neighbours whose large messages
// this rank copies straight from their memory (Link.SingleCopy).
func (t Topology) SingleCopy() []int {
	return t.ranks(func(l Link) bool { return l.SingleCopy })
}

// Sealed returns, in rank order, the peers whose links are sealed.
func (t Topology) Sealed() []int { return t.ranks(Link.Sealed) }

// Cipher returns the AEAD of the sealed links: "" if none is sealed,
// "mixed" if they differ.
func (t Topology) Cipher() string {
	c := ""
	for _, l := range t.Links {
		switch {
		case l.Cipher == "" || l.Cipher == c:
		case c == "":
			c = l.Cipher
		default:
			return "mixed"
		}
	}
	return c
}

// ranks returns, in rank order, the ranks of the links that is accepts.
func (t Topology) ranks(is func(Link) bool) []int {
	var r []int
	for _, l := range t.Links {
		if is(l) {
			r = append(r, l.Rank)
		}
	}
	return r
}

// Topology returns how the transport's world is joined; the Links are the
// caller's.
func (t *NetTransport) Topology() Topology {
	top := Topology{Star: t.topo.star, Center: -1, Loopback: t.topo.loopback}
	if top.Star {
		top.Center = 0
	} else {
		top.Hosts = t.hosts()
	}
	for _, p := range t.view().Peers {
		if p.rank == t.rank || p.link == nil {
			continue
		}
		l := Link{Rank: p.rank, Medium: MediumTCP}
		if _, routed := p.link.(*routeLink); routed {
			l.Medium = MediumRelay
		}
		if c := sealed.Cipher(p.seal.Load()); c != 0 {
			l.Cipher = c.String()
		}
		if c := p.can(); c.mailbox != nil {
			l.Medium, l.SingleCopy = MediumShm, c.copy.In
		}
		top.Links = append(top.Links, l)
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
		if host := t.topo.nbr.Host(); r == t.rank && host != ([frame.HostIDSize]byte{}) {
			id = &host
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
