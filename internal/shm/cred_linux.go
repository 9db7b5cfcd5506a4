//go:build linux

package shm

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// PeerCred returns the uid and pid of the process at the other end of c,
// as they were when it connected (SO_PEERCRED). The pid may be reused once
// that process exits.
func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	err = control(c, func(fd int) error {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		uid, pid = int(cred.Uid), int(cred.Pid)
		return nil
	})
	return uid, pid, err
}
