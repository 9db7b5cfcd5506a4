//go:build linux || freebsd

package heap

import "github.com/boltmesh/boltmesh/internal/shm"

// openShared returns a close-on-exec shared-memory object of size bytes,
// sealed so that a peer it is passed to cannot shrink or grow it
// (shm.Create: a memfd on Linux, an anonymous shm object on FreeBSD). It is
// sparse: only pages that are touched cost memory.
func openShared(size uint64) (int, error) {
	return shm.Create("boltmesh-heap", int(size))
}
