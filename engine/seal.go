package engine

import (
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/handshake"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// Sealed links (Options.Seal; frame/spec.md, "Sealed links"). Each end
// says in its HELLO what its options say and how it sees the connection
// (sealFlags); both decide from both HELLOs alone (handshake.Sealing), so they
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

// sealStep is the medium step of sealed links (medium.go): the keys of
// a connection that is sealed.
func sealStep(t *NetTransport, hc *hsConn, _, _ int, dialer bool, m *medium) (err error) {
	m.keys, err = sealKeys(t, hc, dialer)
	return err
}

// sealKeys returns the keys that seal the connection hc's handshake
// completed, from this end (the dialer's or the acceptor's), or nil if it
// is not sealed; it logs unsealedWarning, once, for a connection that
// leaves the host unsealed.
func sealKeys(t *NetTransport, hc *hsConn, dialer bool) (*sealed.Keys, error) {
	on, warn := handshake.SealedLink(hc.Self, hc.Theirs)
	if warn {
		t.door.sealWarn.Do(func() { t.opts.Logger.Warn(unsealedWarning, "rank", t.rank, "peer", hc.Addr()) })
	}
	if !on {
		return nil, nil
	}
	c := sealed.Agree(sealed.Cipher(hc.Self.Cipher), sealed.Cipher(hc.Theirs.Cipher))
	d, a := hc.Raw[:], hc.Peer[:]
	if !dialer {
		d, a = a, d
	}
	kd, ka, err := sealed.Derive(c, t.opts.MeshKey, d, a)
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
