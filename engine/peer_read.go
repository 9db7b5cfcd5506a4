package engine

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/boltmesh/boltmesh/internal/shm"
)

// Reading a neighbour's memory. On Linux a rank may copy straight out of
// a neighbour's address space (process_vm_readv), the single copy that
// OpenMPI's shared-memory transport calls CMA: package collective's
// AlgorithmPeerRead reduces a large allreduce between two neighbours that
// way, each reading the half it reduces out of the other's data, then
// the other's reduced half. The neighbour's process is the one at the
// other end of the meeting's socket (SO_PEERCRED), as this rank's pid
// namespace numbers it; the kernel allows the read where this process
// may ptrace that one (the same user, and no policy against it).

// peerReadable reports whether rank r is a neighbour whose memory this
// rank may try to read: the system has the call and the pair's pipes are
// up. Both ends of a pair answer alike; whether the kernel allows the
// read need not be alike, and the caller agrees on that with the
// neighbour.
func (t *NetTransport) peerReadable(r int) bool {
	return shm.CanReadProcess && t.mailboxOf(r) != nil
}

// readPeer copies len(dst) bytes at addr in rank r's address space into
// dst. It allocates nothing but its error: the peer's loss if it was lost
// or its process is gone (ESRCH), else a *PeerError wrapping ErrPeerRead.
func (t *NetTransport) readPeer(r int, addr uintptr, dst []byte) error {
	var pid int64
	if r >= 0 && r < len(t.peers) {
		if l, ok := t.peers[r].link.(*meshLink); ok {
			pid = l.pid.Load()
		}
	}
	if pid <= 0 {
		return &PeerError{Op: "read", Rank: r, Err: ErrPeerRead}
	}
	if err := shm.ReadProcess(int(pid), addr, dst); err != nil {
		if lost := t.peers[r].lostErr("read"); lost != nil {
			return lost
		}
		if errors.Is(err, unix.ESRCH) {
			return &PeerError{Op: "read", Rank: r, Err: ErrPeerLost, Cause: err}
		}
		return &PeerError{Op: "read", Rank: r, Err: ErrPeerRead, Cause: err}
	}
	return nil
}
