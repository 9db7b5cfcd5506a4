//go:build freebsd

package shm

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FreeBSD's sys/fcntl.h and sys/mman.h values that x/sys does not define.
const (
	fAddSeals       = 19  // F_ADD_SEALS
	fGetSeals       = 20  // F_GET_SEALS
	fSealSeal       = 1   // F_SEAL_SEAL
	fSealShrink     = 2   // F_SEAL_SHRINK
	fSealGrow       = 4   // F_SEAL_GROW
	sysShmOpen2     = 571 // SYS_shm_open2 (FreeBSD 13+)
	shmAnon         = 1   // SHM_ANON, the (char *)1 path
	shmAllowSealing = 1   // SHM_ALLOW_SEALING
)

// Create returns a close-on-exec anonymous shared-memory object of size
// bytes, sealed so that no holder can shrink or grow it or change its
// seals: shm_open2(SHM_ANON, O_RDWR|O_CLOEXEC, 0600, SHM_ALLOW_SEALING,
// "memfd:"+name) (what libc's memfd_create calls), ftruncate, then
// F_ADD_SEALS F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL. Writes stay allowed.
// The caller owns fd. A size below 1 is an *ArgError wrapping ErrSize.
func Create(name string, size int) (fd int, err error) {
	if size < 1 {
		return -1, &ArgError{Func: "Create", Arg: "size", Value: size, Err: ErrSize}
	}
	p, err := unix.BytePtrFromString("memfd:" + name)
	if err != nil {
		return -1, os.NewSyscallError("shm_open2", err)
	}
	r, _, e := unix.Syscall6(sysShmOpen2, shmAnon, unix.O_RDWR|unix.O_CLOEXEC, 0o600, shmAllowSealing, uintptr(unsafe.Pointer(p)), 0)
	if e != 0 {
		return -1, os.NewSyscallError("shm_open2", e)
	}
	fd = int(r)
	if err := sizeAndSeal(fd, size); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
