package engine

import (
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// Sealed links (Options.Seal; frame/spec.md, "Sealed links"). Each end
// says in its HELLO what its options say and how it sees the connection
// (sealFlags); both decide from both HELLOs alone (sealing), so they
// agree, and a relay that alters either HELLO fails the proofs of the
// key, which cover both. A sealed connection's keys come from the mesh
// key and both HELLOs (sealKeys); adopt wraps its Stream in a
// sealed.Stream, and nothing above the Stream seam learns of it.

// unsealedWarning is logged once by a transport with a link that leaves
// its host unsealed.
const unsealedWarning = "boltmesh: links to other hosts are not sealed: anyone on the path can read and alter their frames. " +
	"Give every rank the same mesh key (Options.MeshKey, BOLTMESH_KEY, --key-file), which seals them by default, and leave Options.Seal (--seal) at auto or always"

// sealFlags returns this rank's HELLO seal flags for a connection to or
// from remote (host:port).
func (o *Options) sealFlags(remote string) uint8 {
	var f uint8
	switch o.Seal {
	case SealAlways:
		f |= frame.SealAlways
	case SealNever:
		f |= frame.SealNever
	}
	if !isLoopback(remote) {
		f |= frame.SealRemote
	}
	if len(o.MeshKey) > 0 {
		f |= frame.SealKeyed
	}
	return f
}

// sealing decides from both ends' HELLOs whether their connection is
// sealed, or says why they cannot agree (one end's SealAlways, the
// other's SealNever). Neighbours, whose frames go through shared memory,
// are never sealed; an end's SealNever wins over the other's SealAuto,
// which seals a keyed connection that leaves the host.
func sealing(mine, theirs frame.Hello) (on bool, why string) {
	var zero [frame.HostIDSize]byte
	f := mine.Seal | theirs.Seal
	switch {
	case f&frame.SealNever != 0 && f&frame.SealAlways != 0:
		return false, "one end seals every link (Options.Seal SealAlways) and the other none (SealNever)"
	case f&frame.SealNever != 0 || mine.HostID != zero && mine.HostID == theirs.HostID:
		return false, ""
	case f&frame.SealAlways != 0:
		return true, ""
	}
	return mine.Seal&theirs.Seal&frame.SealKeyed != 0 && leaves(mine, theirs), ""
}

// leaves reports whether a connection leaves the host, as its HELLOs
// tell: an end sees the other's address as not loopback, and they do not
// run on one machine (network namespaces, containers).
func leaves(mine, theirs frame.Hello) bool {
	var zero [frame.MachineIDSize]byte
	return (mine.Seal|theirs.Seal)&frame.SealRemote != 0 && (mine.Machine == zero || mine.Machine != theirs.Machine)
}

// sealedLink reports whether a connection whose handshake agreed is sealed
// (sealing), and whether unsealedWarning is about it: it leaves the host
// and is not sealed.
func sealedLink(mine, theirs frame.Hello) (on, warn bool) {
	on, _ = sealing(mine, theirs)
	return on, !on && leaves(mine, theirs)
}

// sealStep is the medium step of sealed links (medium.go): the keys of
// a connection that is sealed.
func sealStep(t *NetTransport, hc *hsConn, _, _ int, dialer bool, m *medium) (err error) {
	m.keys, err = hc.sealKeys(t, dialer)
	return err
}

// sealKeys returns the keys that seal the connection hc's handshake
// completed, from this end (the dialer's or the acceptor's), or nil if it
// is not sealed; it logs unsealedWarning, once, for a connection that
// leaves the host unsealed.
func (hc *hsConn) sealKeys(t *NetTransport, dialer bool) (*sealed.Keys, error) {
	on, warn := sealedLink(hc.self, hc.theirs)
	if warn {
		t.door.sealWarn.Do(func() { t.opts.Logger.Warn(unsealedWarning, "rank", t.rank, "peer", hc.addr()) })
	}
	if !on {
		return nil, nil
	}
	c := sealed.Agree(sealed.Cipher(hc.self.Cipher), sealed.Cipher(hc.theirs.Cipher))
	d, a := hc.raw[:], hc.peer[:]
	if !dialer {
		d, a = a, d
	}
	kd, ka, err := sealed.Derive(c, hc.o.MeshKey, d, a)
	if dialer {
		return &kd, err
	}
	return &ka, err
}

// sealCrew is how many goroutines seal or open a sealed link's large
// batch of records (sealed.Options.Crew) for a rank that shares cpus
// cores with local ranks: half its share of the cores, at most 4; 1 (no
// crew) where the share is under 4 cores, as on a 2-core machine, where
// the crew only takes the core the other end needs (bench/RESULTS.md,
// "sealed links").
func sealCrew(cpus, local int) int {
	return min(max(cpus/max(local, 1)/2, 1), 4)
}

// testSealOptions, when a test sets it, is the sealed.Options of the
// sealed links made after.
var testSealOptions atomic.Pointer[sealed.Options]
