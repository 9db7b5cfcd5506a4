//go:build darwin || openbsd

package ioloop

import "golang.org/x/sys/unix"

// Writev writes bufs with one writev(2). On these systems system calls go
// through libc, so unix.Writev is used; it allocates an iovec array only
// past 8 buffers.
func (s *socketStream) Writev(bufs [][]byte) (int, error) {
	return unix.Writev(s.fd, bufs)
}
