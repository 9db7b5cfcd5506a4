//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Prefault makes every page of mem resident and writable in this process
// now, so that the first messages through it pay no page faults. It never
// changes a byte: on Linux it asks madvise(MADV_POPULATE_WRITE) (5.14+),
// and elsewhere, or where that fails, it adds 0 atomically to an aligned
// word of each page, which is safe while neighbours write the same memory.
// Call it once at setup; on a large mapping it costs the whole mapping in
// memory.
func Prefault(mem []byte) {
	if len(mem) == 0 || populate(mem) {
		return
	}
	touch(mem)
}

// touch adds 0 atomically to one aligned word in each page that mem
// covers: the page's first word, or for mem's first page the first aligned
// word at or after its start.
func touch(mem []byte) {
	if len(mem) == 0 {
		return
	}
	page := uintptr(unix.Getpagesize())
	base := uintptr(unsafe.Pointer(&mem[0]))
	end := base + uintptr(len(mem))
	for p := (base + 3) &^ 3; p+4 <= end; p = (p + page) &^ (page - 1) {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&mem[p-base])), 0)
	}
}
