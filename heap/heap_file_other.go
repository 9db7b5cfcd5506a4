//go:build darwin || netbsd || openbsd

package heap

import (
	"os"

	"golang.org/x/sys/unix"
)

// openShared returns a close-on-exec descriptor of a size-byte file created
// in os.TempDir and unlinked at once, so nothing is left behind however the
// process ends.
func openShared(size uint64) (int, error) {
	f, err := os.CreateTemp("", "boltmesh-heap-*")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return -1, err
	}
	// Own a descriptor of our own: f's is closed by f.Close (deferred).
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	return fd, nil
}
