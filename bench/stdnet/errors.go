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
