//go:build darwin

package shm

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// PeerCred returns the uid and pid of the process at the other end of c,
// as they were when it connected: the uid from LOCAL_PEERCRED (xucred),
// the pid from LOCAL_PEERPID. The pid may be reused once that process
// exits.
func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	err = control(c, func(fd int) error {
		cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		p, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		uid, pid = int(cred.Uid), p
		return nil
	})
	return uid, pid, err
}
