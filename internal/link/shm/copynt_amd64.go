//go:build amd64 && !purego

package shm

import "unsafe"

//go:noescape
func copyNT(dst, src unsafe.Pointer, blocks uintptr)

// copyStream copies src into dst, which must be at least as long, as
// copy does, but with non-temporal stores for the 64-byte-aligned middle
// of a copy of ntMin bytes or more: the lines go to memory without being read
// first, rather than each taken from the cache of the other process's
// core, where they were last read. The stores are fenced before it
// returns. It returns the number of bytes copied.
func copyStream(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < ntMin {
		return copy(dst, src)
	}
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 63)
	copy(dst[:head], src)
	blocks := (n - head) / 64
	copyNT(unsafe.Pointer(&dst[head]), unsafe.Pointer(&src[head]), uintptr(blocks))
	done := head + blocks*64
	copy(dst[done:n], src[done:n])
	return n
}
