//go:build linux || freebsd || netbsd

package ioloop

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writev writes bufs with one writev(2) through the stream's iovec
// slice, so that no iovec array is allocated per call (unix.Writev
// allocates past 8 buffers and is not provided on every BSD).
func (s *socketStream) Writev(bufs [][]byte) (int, error) {
	v := s.iov[:0]
	for _, b := range bufs {
		var e unix.Iovec
		e.Base = unsafe.SliceData(b)
		e.SetLen(len(b))
		v = append(v, e)
	}
	s.iov = v
	if len(v) == 0 {
		return 0, nil
	}
	n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(s.fd), uintptr(unsafe.Pointer(&v[0])), uintptr(len(v)))
	clear(v) // drop the references to the callers' buffers
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
