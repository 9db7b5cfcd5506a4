package shm

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// SingleCopy names the mechanism ReadPeer uses on this system, or is ""
// where it has none.
const SingleCopy = "cma"

// ReadPeer copies len(dst) bytes from address addr of process pid's
// memory into dst in one copy (process_vm_readv, the kernel's cross
// memory attach): the single copy between neighbours, which moves a
// large message without the two copies through a ring. The kernel
// allows it where this process may ptrace pid (same user, and Yama's
// ptrace_scope and the container permitting). A refusal wraps
// ErrNoSingleCopy; a range that is not pid's memory, a process gone or a
// short copy wraps ErrCopyFault. Only dst is written, and only by the
// kernel, however bad addr is.
func ReadPeer(pid int, addr uint64, dst []byte) error {
	for done := 0; done < len(dst); {
		local := []unix.Iovec{{Base: &dst[done]}}
		local[0].SetLen(len(dst) - done)
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(done), Len: len(dst) - done}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EPERM || err == unix.ENOSYS || err == unix.EACCES:
			return fmt.Errorf("%w: process %d: %v", ErrNoSingleCopy, pid, err)
		case err != nil:
			return fmt.Errorf("%w: %d bytes at %#x of process %d: %v", ErrCopyFault, len(dst)-done, addr+uint64(done), pid, err)
		case n <= 0:
			return fmt.Errorf("%w: %d bytes at %#x of process %d: copied none", ErrCopyFault, len(dst)-done, addr+uint64(done), pid)
		}
		done += n
	}
	return nil
}
