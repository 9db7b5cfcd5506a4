//go:build freebsd

package shm

import (
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// xucred is FreeBSD's struct xucred (sys/ucred.h) with the union that
// x/sys names `_` (a *byte) spelled as the pid it holds, so that no
// pointer-typed field of a Go value ever holds a pid.
type xucred struct {
	version uint32
	uid     uint32
	ngroups int16
	groups  [16]uint32
	pid     int32 // cr_pid, the first member of the union
	_       [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// xucredVersion is XUCRED_VERSION.
const xucredVersion = 0

// PeerCred returns the uid and pid of the process at the other end of c,
// as they were when it connected (LOCAL_PEERCRED). The pid is the xucred's
// cr_pid, which FreeBSD 13 and later fill in; read with a getsockopt into
// a struct of our own (x/sys's Xucred hides it in a pointer field). The pid
// may be reused once that process exits.
func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	err = control(c, func(fd int) error {
		var x xucred
		n := uint32(unsafe.Sizeof(x))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED,
			uintptr(unsafe.Pointer(&x)), uintptr(unsafe.Pointer(&n)), 0)
		if e != 0 {
			return os.NewSyscallError("getsockopt", e)
		}
		if x.version != xucredVersion || uintptr(n) != unsafe.Sizeof(x) {
			return os.NewSyscallError("getsockopt", unix.EINVAL)
		}
		uid, pid = int(x.uid), int(x.pid)
		return nil
	})
	return uid, pid, err
}
