package stdnet

import "errors"

// ErrMismatch means a peer sent something other than what the protocol
// expects at that point: a frame of the wrong kind, a message that does not
// fit, or a barrier signal of another barrier.
var ErrMismatch = errors.New("stdnet: unexpected frame")

// ErrOutOfBounds means a put or get addressed bytes outside the target's
// heap. A refused put is reported by the next Quiet.
var ErrOutOfBounds = errors.New("stdnet: heap access out of bounds")

// ErrClosed is returned by a Mesh after Close.
var ErrClosed = errors.New("stdnet: mesh closed")

// ErrHandshake means a connection to a rank's listener was refused: it
// did not open with a HELLO, or its HELLO names no rank and channel this
// rank expects (outside the world, itself, or one already connected).
// The mesh forms regardless, from the connections that pass.
var ErrHandshake = errors.New("stdnet: connection refused")

// ErrMeshKey means a HELLO failed the mesh key check: the dialer has
// another key, or none.
var ErrMeshKey = errors.New("stdnet: mesh key mismatch")

// ErrReplay means a HELLO answered a nonce other than the challenge's: it
// was recorded from another connection.
var ErrReplay = errors.New("stdnet: hello answers another challenge (replayed)")
