//go:build linux

package heap

import (
	"os"

	"golang.org/x/sys/unix"
)

// openShared returns a close-on-exec memfd of size bytes. The memfd is
// sparse: only pages that are touched cost memory.
func openShared(size uint64) (int, error) {
	fd, err := unix.MemfdCreate("boltmesh-heap", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	return fd, nil
}
