//go:build linux || freebsd || netbsd || openbsd

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// Socketpair returns a connected pair of close-on-exec Unix stream sockets
// (SOCK_CLOEXEC), for doorbells. The caller owns both fds.
func Socketpair() (a, b int, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, os.NewSyscallError("socketpair", err)
	}
	return fds[0], fds[1], nil
}
