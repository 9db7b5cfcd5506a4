package frame

import (
	"errors"
	"fmt"
)

// Sentinel errors wrapped by *DecodeError. Test for them with errors.Is.
var (
	// ErrShort means fewer bytes than a header (or a fixed payload) were given.
	ErrShort = errors.New("frame: short buffer")
	// ErrUnknownKind means the kind byte names no kind of this format version.
	ErrUnknownKind = errors.New("frame: unknown kind")
	// ErrBadFlags means a flag bit is set that the frame's kind does not allow.
	ErrBadFlags = errors.New("frame: flags not allowed for kind")
	// ErrReserved means a field that must be zero is not: Dst on a kind a
	// star's coordinator does not forward.
	ErrReserved = errors.New("frame: reserved field not zero")
	// ErrTooLarge means a payload length is above the configured maximum.
	ErrTooLarge = errors.New("frame: payload too large")
	// ErrBadLength means a payload length differs from the fixed size of its kind.
	ErrBadLength = errors.New("frame: wrong payload length for kind")
	// ErrBadRelay means a RELAY announces a frame that no coordinator
	// relays: not a routed kind, empty, or not to the receiver from the
	// worker the RELAY names.
	ErrBadRelay = errors.New("frame: a relay of a frame no coordinator relays")
	// ErrBadMagic means a HELLO payload does not start with the boltmesh magic.
	ErrBadMagic = errors.New("frame: bad magic number")
)

// DecodeError says which field of a frame was rejected and why.
type DecodeError struct {
	Kind  Kind   // kind byte of the frame (may itself be the bad field)
	Field string // the field that was rejected
	Value uint64 // the offending value
	Limit uint64 // the limit it broke, where one applies
	Err   error  // one of the package's sentinel errors
}

func (e *DecodeError) Error() string {
	if e.Limit != 0 {
		return fmt.Sprintf("%v: %s %s=%d (limit %d)", e.Err, e.Kind, e.Field, e.Value, e.Limit)
	}
	return fmt.Sprintf("%v: %s %s=%d", e.Err, e.Kind, e.Field, e.Value)
}

// Unwrap returns the sentinel error.
func (e *DecodeError) Unwrap() error { return e.Err }
