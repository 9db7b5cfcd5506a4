//go:build linux

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// CanReadProcess reports whether ReadProcess is implemented here.
const CanReadProcess = true

// ReadProcess copies len(dst) bytes at addr in the address space of
// process pid into dst, in one copy by the kernel (process_vm_readv,
// "cross-memory attach"). The kernel allows it where this process may
// ptrace pid: the same user, and no policy (Yama's ptrace_scope, a
// seccomp filter) against it. A failure is an *os.SyscallError: ESRCH
// once pid has exited, EPERM where reading is not allowed, EFAULT for an
// address pid has not mapped. It allocates nothing.
func ReadProcess(pid int, addr uintptr, dst []byte) error {
	for len(dst) > 0 {
		var local [1]unix.Iovec
		local[0].Base = &dst[0]
		local[0].SetLen(len(dst))
		remote := [1]unix.RemoteIovec{{Base: addr, Len: len(dst)}}
		n, err := unix.ProcessVMReadv(pid, local[:], remote[:], 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("process_vm_readv", err)
		case n <= 0:
			return os.NewSyscallError("process_vm_readv", unix.EFAULT)
		}
		dst, addr = dst[n:], addr+uintptr(n)
	}
	return nil
}
