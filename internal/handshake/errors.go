package handshake

import (
	"errors"
	"fmt"
)

// The handshake's errors; the engine's errors.go names the same values
// (engine.ErrHandshake, ...), and engine.HandshakeError is Error.
var (
	// ErrHandshake means a connection was refused during the HELLO
	// handshake (wrong magic, version, world, rank, mesh or key). The
	// *Error that wraps it may also wrap one of the causes below.
	ErrHandshake = errors.New("boltmesh: handshake failed")
	// ErrWrongKey is the cause of a *Error when the two ends of a
	// connection hold different mesh keys, or only one has a key: the
	// acceptor refused the dialer's proof of the key (a dialer sees this as
	// a refusal by the peer), or the dialer the acceptor's.
	ErrWrongKey = errors.New("boltmesh: mesh keys differ")
	// ErrSlotTaken is the cause of a *Error when the acceptor
	// already has a connection for the rank and stream the dialer proved
	// the key for: another process joined in its place, during the mesh's
	// formation or before (a rank keeps answering late dialers for
	// Options.LateJoinWindow after its mesh formed). Without a mesh key,
	// anyone who reaches the port can do that: set one (Options.MeshKey).
	ErrSlotTaken = errors.New("boltmesh: this rank's place in the mesh is taken")
	// ErrVersion is the cause of a *Error when the peer speaks
	// another protocol version (frame.Version).
	ErrVersion = errors.New("boltmesh: protocol versions differ")
)

// Error reports a connection refused during the handshake, by this
// rank (Local true) or by the peer.
type Error struct {
	Addr   string // the remote address
	Rank   int    // the rank the peer claimed or was expected to be, or -1
	Local  bool   // this rank refused the peer
	Reason string
	Err    error // a cause, if any
}

// Error says who refused whom, and why.
func (e *Error) Error() string {
	side := "refused by peer"
	if e.Local {
		side = "refused"
	}
	s := fmt.Sprintf("%v: %s (rank %d) %s: %s", ErrHandshake, e.Addr, e.Rank, side, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrHandshake and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrHandshake}
	}
	return []error{ErrHandshake, e.Err}
}
