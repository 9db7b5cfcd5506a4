//go:build linux

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// The fcntl commands and bits for seals.
const (
	fAddSeals   = unix.F_ADD_SEALS
	fGetSeals   = unix.F_GET_SEALS
	fSealSeal   = unix.F_SEAL_SEAL
	fSealShrink = unix.F_SEAL_SHRINK
	fSealGrow   = unix.F_SEAL_GROW
)

// Create returns a close-on-exec memfd of size bytes, named name (for
// /proc/self/fd and /proc/self/maps only), sealed so that no holder can
// shrink or grow it or change its seals: memfd_create(name,
// MFD_CLOEXEC|MFD_ALLOW_SEALING), ftruncate, then F_ADD_SEALS
// F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL. Writes stay allowed. The object is
// sparse: only touched pages cost memory. The caller owns fd. A size below
// 1 is an *ArgError wrapping ErrSize.
func Create(name string, size int) (fd int, err error) {
	if size < 1 {
		return -1, &ArgError{Func: "Create", Arg: "size", Value: size, Err: ErrSize}
	}
	fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	if err := sizeAndSeal(fd, size); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
