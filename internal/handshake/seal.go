package handshake

import "github.com/boltmesh/boltmesh/frame"

// Sealing decides from both ends' HELLOs whether their connection is
// sealed, or says why they cannot agree (one end's SealAlways, the
// other's SealNever). Neighbours, whose frames go through shared memory,
// are never sealed; an end's SealNever wins over the other's SealAuto,
// which seals a keyed connection that leaves the host.
func Sealing(mine, theirs frame.Hello) (on bool, why string) {
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

// SealedLink reports whether a connection whose handshake agreed is sealed
// (Sealing), and whether a warning is due about it: it leaves the host
// and is not sealed.
func SealedLink(mine, theirs frame.Hello) (on, warn bool) {
	on, _ = Sealing(mine, theirs)
	return on, !on && leaves(mine, theirs)
}
