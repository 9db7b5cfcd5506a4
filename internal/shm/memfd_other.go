//go:build darwin || netbsd || openbsd

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// Create returns a close-on-exec descriptor of a size-byte file created in
// os.TempDir and unlinked at once, so nothing is left behind however the
// process ends. name is not used. These systems offer no seals here: a
// neighbour holding the fd CAN truncate the file, and loads from a mapping
// past its new end fault. The file is backed by the temp directory's file
// system, not only by memory. The caller owns fd. A size below 1 is an
// *ArgError wrapping ErrSize.
func Create(name string, size int) (fd int, err error) {
	if size < 1 {
		return -1, &ArgError{Func: "Create", Arg: "size", Value: size, Err: ErrSize}
	}
	f, err := os.CreateTemp("", "boltmesh-shm-*")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return -1, err
	}
	// Own a descriptor of our own: f's is closed by f.Close (deferred).
	fd, err = unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	return fd, nil
}

// Check verifies that fd, received from a neighbour, is exactly size bytes
// (fstat); a wrong size is a *ObjectError wrapping ErrSize, a size below 1
// an *ArgError wrapping ErrSize. These systems have no seals here, so
// Check cannot stop the neighbour truncating the object later (see
// Create) and never returns ErrNotSealed.
func Check(fd int, size int) error {
	if size < 1 {
		return &ArgError{Func: "Check", Arg: "size", Value: size, Err: ErrSize}
	}
	return checkSize(fd, size)
}
