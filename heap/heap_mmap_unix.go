//go:build linux || darwin || freebsd || netbsd || openbsd

package heap

import (
	"os"

	"golang.org/x/sys/unix"
)

// pageSize returns the system page size; New rounds heap sizes up to it.
func pageSize() uint64 { return uint64(unix.Getpagesize()) }

// mapShared maps size bytes of fd read-write and shared.
func mapShared(fd int, size uint64) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return mem, nil
}

// unmap unmaps mem, which must be exactly a slice mapShared returned.
func unmap(mem []byte) error {
	return os.NewSyscallError("munmap", unix.Munmap(mem))
}

// closeFD closes fd.
func closeFD(fd int) error {
	return os.NewSyscallError("close", unix.Close(fd))
}
