package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
)

// The values of --transport.
const (
	// transportAuto: shared memory between ranks on one host, TCP
	// between hosts (engine.SharedMemoryAuto). The default.
	transportAuto = "auto"
	// transportShm is transportAuto, but rank 0 fails when a rank on its
	// host is not reached over shared memory.
	transportShm = "shm"
	// transportTCP: TCP between every pair (engine.SharedMemoryOff).
	transportTCP = "tcp"
	// transportThunderbolt is transportAuto with thunderbolt.Options
	// for the TCP links.
	transportThunderbolt = "thunderbolt"
)

// transportHelp is --transport's help.
const transportHelp = "transport: auto (shared memory between ranks on one host, TCP between hosts), shm (as auto, but rank 0 fails\n" +
	"if a rank on its host is not reached over shared memory), tcp (TCP between every pair, loopback included), or thunderbolt\n" +
	"(as auto, with TCP defaults for fast point-to-point links: 2 streams per pair, 4 MiB socket buffers)"

// checkTransport validates --transport: auto, shm, tcp or thunderbolt
// (also tb).
func checkTransport(f *meshFlags, note func(string)) error {
	switch f.transport {
	case transportAuto, transportTCP:
	case transportShm:
		if f.coordinator != "" {
			return flagErr("transport", f.transport, "a star (--coordinator) always uses TCP; drop --coordinator or use auto")
		}
	case transportThunderbolt, "tb":
		f.transport = transportThunderbolt
		if f.coordinator != "" {
			note("note: a star uses one stream per link; --transport thunderbolt only enlarges its socket buffers")
		}
	default:
		return flagErr("transport", f.transport, "want auto, shm, tcp or thunderbolt")
	}
	return nil
}

// network names what carries frames between ranks that do not share
// memory: "thunderbolt" with --transport thunderbolt, else "tcp".
func (f *meshFlags) network() string {
	if f.transport == transportThunderbolt {
		return transportThunderbolt
	}
	return transportTCP
}

// links says how one rank reaches each of the others: through shared
// memory (its neighbours) or over the network.
type links struct {
	network string // "tcp" or "thunderbolt"
	shm     []int  // the neighbours, in rank order
	net     []int  // the other ranks, in rank order
	copy    []int  // the neighbours this rank copies large messages from once
	copyMin int    // from this size (engine.Options.SingleCopyMin); not positive: off
	sealed  []int  // the ranks whose links are sealed (engine.Options.Seal)
	cipher  string // their AEAD
	hosts   []int  // each rank's host (engine.Topology.Hosts); nil in a star
}

// linksOf reads t's links once its mesh has formed.
func linksOf(t *engine.NetTransport, network string) links {
	top := t.Topology()
	l := links{network: network, shm: top.Neighbours(), copy: top.SingleCopy(), copyMin: t.Options().SingleCopyMin, sealed: top.Sealed(), cipher: top.Cipher(), hosts: top.Hosts}
	for r := range t.WorldSize() {
		if r != t.Rank() && !slices.Contains(l.shm, r) {
			l.net = append(l.net, r)
		}
	}
	return l
}

// name is the transport the report names: "shm" when every other rank
// is a neighbour, the network's name when none is (or there is no other
// rank), "shm+" and the network's name when some are.
func (l links) name() string {
	switch {
	case len(l.shm) == 0:
		return l.network
	case len(l.net) == 0:
		return transportShm
	}
	return transportShm + "+" + l.network
}

// line is the header bench prints before its tables, e.g.
// "transport: shared memory (ranks 1-3 on this host); large messages:
// cma from 256KiB".
func (l links) line() string {
	switch {
	case len(l.shm) == 0 && len(l.net) == 0:
		return "transport: " + l.network
	case len(l.shm) == 0:
		return "transport: " + l.network + "; " + l.seal()
	case len(l.net) == 0:
		return "transport: shared memory (" + rankList(l.shm) + " on this host); large messages: " + l.singleCopy()
	}
	return "transport: shared memory with " + rankList(l.shm) + "; " + l.network + " with " + rankList(l.net) + l.hostCount() + "; large messages between neighbours: " + l.singleCopy() + "; " + l.seal()
}

// hostCount says how many hosts the world spans and how many ranks each
// holds, in the order of their lowest rank (the order collectives run
// their steps in): e.g. " (2 hosts of 4 ranks)", " (3 hosts of 2, 2, 1
// ranks)"; "" where that is not known (a star).
func (l links) hostCount() string {
	var per []int
	for _, h := range l.hosts {
		for len(per) <= h {
			per = append(per, 0)
		}
		per[h]++
	}
	if len(per) < 2 {
		return ""
	}
	sizes := make([]string, len(per))
	same := true
	for i, k := range per {
		sizes[i] = strconv.Itoa(k)
		same = same && k == per[0]
	}
	if same {
		return fmt.Sprintf(" (%d hosts of %d ranks)", len(per), per[0])
	}
	return fmt.Sprintf(" (%d hosts of %s ranks)", len(per), strings.Join(sizes, ", "))
}

// seal says which network links are sealed (bench.Config.Sealed): e.g.
// "sealed (aes-256-gcm)", "unsealed", or both with the ranks of each;
// "" where there are none.
func (l links) seal() string {
	var clear []int
	for _, r := range l.net {
		if !slices.Contains(l.sealed, r) {
			clear = append(clear, r)
		}
	}
	sealed := "sealed (" + l.cipher + ")"
	switch {
	case len(l.net) == 0:
		return ""
	case len(clear) == len(l.net):
		return "unsealed"
	case len(clear) == 0:
		return sealed
	}
	return sealed + " with " + rankList(l.sealed) + ", unsealed with " + rankList(clear)
}

// singleCopy says how large messages move between this rank and its
// neighbours (bench.Config.SingleCopy), or "" if it has none.
func (l links) singleCopy() string {
	var rings []int
	for _, r := range l.shm {
		if !slices.Contains(l.copy, r) {
			rings = append(rings, r)
		}
	}
	cma := engine.SingleCopyMechanism + " from " + bench.FormatSize(l.copyMin)
	switch {
	case len(l.shm) == 0:
		return ""
	case l.copyMin <= 0:
		return "rings (off)"
	case engine.SingleCopyMechanism == "":
		return "rings (no single copy on this system)"
	case len(rings) == len(l.shm):
		return "rings (refused by the kernel)"
	case len(rings) == 0:
		return cma
	}
	return cma + " with " + rankList(l.copy) + ", rings with " + rankList(rings) + " (refused by the kernel)"
}

// require checks that every rank of local (the ranks on this host) is a
// neighbour: a *sharedMemoryError names those that are not.
func (l links) require(local []int) error {
	var missing []int
	for _, r := range local {
		if !slices.Contains(l.shm, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return &sharedMemoryError{Ranks: missing}
	}
	return nil
}

// sameHost returns the ranks other than rank whose address in peers is
// on this machine: a loopback address, or one of its interfaces'.
func sameHost(peers []string, rank int) []int {
	mine := map[string]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				mine[ipn.IP.String()] = true
			}
		}
	}
	var local []int
	for r, a := range peers {
		host, _, err := net.SplitHostPort(a)
		ip := net.ParseIP(host)
		if r == rank || err != nil {
			continue
		}
		if isLoopback(a) || ip != nil && mine[ip.String()] {
			local = append(local, r)
		}
	}
	return local
}

// checkLinks returns how this rank of j reaches the others; with
// --transport shm, rank 0 refuses (with a *sharedMemoryError) a mesh in
// which a rank on its host is not a neighbour.
func checkLinks(f *meshFlags, j *joined) (links, error) {
	l := linksOf(j.t, f.network())
	if f.transport != transportShm || j.t.Rank() != 0 {
		return l, nil
	}
	return l, l.require(sameHost(j.peers, 0))
}

// rankList writes ranks as "rank 3", "ranks 1, 2" or "ranks 1-3, 5": a
// run of three or more consecutive ranks as a range.
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
			i = j + 1
			continue
		}
		parts = append(parts, strconv.Itoa(ranks[i]))
		i++
	}
	return "ranks " + strings.Join(parts, ", ")
}
