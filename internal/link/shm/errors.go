package shm

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/ioloop"
)

// errCorrupt fails a pipe whose other side published an impossible
// position, length or box word: ioloop.ErrProtocol, as a frame that does
// not decode.
var errCorrupt = fmt.Errorf("%w: pipe position past the ring", ioloop.ErrProtocol)

// Errors of ReadPeer, the single copy between neighbours.
var (
	// ErrNoSingleCopy means the kernel refuses this process a copy from
	// the other's memory, or has no such call: large messages go through
	// the rings.
	ErrNoSingleCopy = errors.New("shm: single copy refused")
	// ErrCopyFault means a copy from the other process's memory failed
	// part way: the range is not its memory, or the process is gone.
	ErrCopyFault = errors.New("shm: single copy failed")
)

// ErrMeeting means a neighbour's meeting broke its protocol: a message
// of the wrong size or descriptors, a rank or pipes that do not fit the
// handshake's. The pair stays on TCP.
var ErrMeeting = errors.New("shm: a neighbour's meeting broke its protocol")

// ErrNoMeeting is the acceptor's error (Neighbours.Accept) when the
// dialer chose shared memory but never met it.
var ErrNoMeeting = errors.New("chose shared memory without meeting")
