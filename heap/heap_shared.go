//go:build linux || darwin || freebsd || netbsd || openbsd

package heap

import "github.com/boltmesh/boltmesh/internal/shm"

// openShared returns a close-on-exec shared-memory object of size bytes
// that a peer it is passed to can map (shm.Create): on Linux a memfd and on
// FreeBSD an anonymous shm object, both sealed so that the peer cannot
// shrink or grow it, and sparse (only pages that are touched cost memory);
// elsewhere a file in os.TempDir, unlinked at once.
func openShared(size uint64) (int, error) {
	return shm.Create("boltmesh-heap", int(size))
}
