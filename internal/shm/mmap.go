//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// Size returns fd's size in bytes (fstat).
func Size(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return int(st.Size), nil
}

// checkSize is Check's size test.
func checkSize(fd, size int) error {
	got, err := Size(fd)
	if err != nil {
		return err
	}
	if got != size {
		return &ObjectError{Field: "size", Got: int64(got), Want: int64(size), Err: ErrSize}
	}
	return nil
}

// Map maps the first size bytes of fd read-write and shared: stores are
// seen by every process mapping the object. The mapping is page-aligned
// and outlives fd (closing fd after Map is fine). It stays valid until
// Unmap; touching it afterwards faults. A size below 1 is an *ArgError
// wrapping ErrSize.
func Map(fd int, size int) ([]byte, error) {
	if size < 1 {
		return nil, &ArgError{Func: "Map", Arg: "size", Value: size, Err: ErrSize}
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return mem, nil
}

// Unmap unmaps mem, which must be exactly a slice Map returned. Every
// slice of it becomes invalid.
func Unmap(mem []byte) error {
	return os.NewSyscallError("munmap", unix.Munmap(mem))
}
