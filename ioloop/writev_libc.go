//go:build darwin || openbsd

package ioloop

import "golang.org/x/sys/unix"

// writev writes bufs with one writev(2). On these systems system calls go
// through libc, so unix.Writev is used; it allocates an iovec array only
// past 8 buffers.
func writev(fd int, bufs [][]byte, _ *[]unix.Iovec) (int, error) {
	return unix.Writev(fd, bufs)
}
