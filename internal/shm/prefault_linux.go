//go:build linux

package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// populate asks the kernel to fault in the pages mem covers, writable,
// without touching their contents (MADV_POPULATE_WRITE), and reports
// whether it did.
func populate(mem []byte) bool {
	page := uintptr(unix.Getpagesize())
	base := uintptr(unsafe.Pointer(&mem[0]))
	start := base &^ (page - 1)
	end := (base + uintptr(len(mem)) + page - 1) &^ (page - 1)
	_, _, e := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE)
	return e == 0
}
