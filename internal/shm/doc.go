// Package shm is the platform layer for shared memory between ranks
// (processes) on one host: it creates and checks shared-memory objects,
// maps them, passes their descriptors over Unix stream sockets, finds
// neighbours (Listen, Dial, PeerCred) and says which processes can meet at
// all (HostID). It knows nothing of ranks, rings or frames: the engine
// builds those on top.
//
// # Objects
//
// Create makes a close-on-exec object that a neighbour can map but never
// resize:
//   - Linux: memfd_create(MFD_CLOEXEC|MFD_ALLOW_SEALING), sealed with
//     F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL.
//   - FreeBSD: shm_open2(SHM_ANON, ..., SHM_ALLOW_SEALING), the same seals.
//   - darwin, netbsd, openbsd: a file created in os.TempDir and unlinked at
//     once. These objects have NO seals: a neighbour holding the fd can
//     truncate it, and a mapping's loads past the new end then fault. Check
//     verifies only the size there.
//
// The receiver of an fd calls Check before Map, so that a neighbour cannot
// hand it an object it could later shrink (a shrunk mapping faults with
// SIGBUS, which is fatal in Go).
//
// # Passing descriptors
//
// SendFDs and RecvFDs frame messages on a stream socket: a 4-byte
// little-endian length, then 1..MaxMsg bytes, with the fds (SCM_RIGHTS)
// attached to the first bytes. RecvFDs reads exactly one message, never a
// byte of the next, so the fds of one message never arrive with another.
//
// # Neighbours
//
// Listen opens a Unix stream listener (an abstract name on Linux, a socket
// in a fresh 0700 directory elsewhere); a neighbour Dials its Addr; either
// end learns the other's uid and pid with PeerCred. Anyone who can reach
// the socket can connect (abstract names have no permission bits):
// authenticate the peer before sending it anything.
//
// HostID says whether two processes can use this package together: equal
// ids mean the same kernel boot and (on Linux) the same network namespace,
// where abstract sockets live. An equal id is necessary, not sufficient:
// the rendezvous (Dial) is the final test.
//
// # Errors
//
// Errors are the sentinels in errors.go, wrapped in the typed errors there
// (*ObjectError, *MessageError, *FDError, *ArgError, *HostIDError); system
// call failures are *os.SyscallError values. Test them with errors.Is and
// errors.As.
package shm
