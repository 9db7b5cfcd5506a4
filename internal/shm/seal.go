//go:build linux || freebsd

package shm

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// sealsAdded are the seals Create adds; sealsRequired are those Check
// insists on (F_SEAL_SEAL only stops the owner loosening them later, and
// an object with SHRINK|GROW cannot be resized whoever holds it).
const (
	sealsAdded    = fSealShrink | fSealGrow | fSealSeal
	sealsRequired = fSealShrink | fSealGrow
)

// sizeAndSeal sets fd's size and adds sealsAdded.
func sizeAndSeal(fd, size int) error {
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return os.NewSyscallError("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), fAddSeals, sealsAdded); err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	return nil
}

// Check verifies that fd, received from a neighbour, cannot be shrunk or
// grown (F_GET_SEALS holds F_SEAL_SHRINK and F_SEAL_GROW) and is exactly
// size bytes (fstat). An object without those seals, or one that cannot
// carry seals (a regular file, a pipe), is a *ObjectError wrapping
// ErrNotSealed; a wrong size one wrapping ErrSize; a size below 1 an
// *ArgError wrapping ErrSize.
func Check(fd int, size int) error {
	if size < 1 {
		return &ArgError{Func: "Check", Arg: "size", Value: size, Err: ErrSize}
	}
	seals, err := unix.FcntlInt(uintptr(fd), fGetSeals, 0)
	if errors.Is(err, unix.EINVAL) {
		return &ObjectError{Field: "seals", Got: 0, Want: sealsRequired, Err: ErrNotSealed}
	}
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	if seals&sealsRequired != sealsRequired {
		return &ObjectError{Field: "seals", Got: int64(seals), Want: sealsRequired, Err: ErrNotSealed}
	}
	return checkSize(fd, size)
}
