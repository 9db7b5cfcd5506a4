//go:build darwin

package shm

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Socketpair returns a connected pair of close-on-exec Unix stream
// sockets, for doorbells. darwin has no SOCK_CLOEXEC: FD_CLOEXEC is set
// under syscall.ForkLock, so that no fork in this process inherits them.
// The caller owns both fds.
func Socketpair() (a, b int, err error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return -1, -1, os.NewSyscallError("socketpair", err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds[0], fds[1], nil
}
