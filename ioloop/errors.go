package ioloop

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Test for them with errors.Is.
var (
	// ErrClosed means the Loop or the Conn was closed locally.
	ErrClosed = errors.New("ioloop: closed")
	// ErrEOF means the peer closed its end of the connection.
	ErrEOF = errors.New("ioloop: connection closed by peer")
	// ErrProtocol means the peer sent bytes that are not a valid frame.
	ErrProtocol = errors.New("ioloop: protocol violation")
	// ErrCanceled is returned by SendCancel when it gave up before writing.
	ErrCanceled error = errCanceled{}
)

// ConnError reports the failure of one connection: the operation that saw
// it and the underlying cause (an *os.SyscallError, ErrEOF, a
// *frame.DecodeError wrapped in ErrProtocol, or ErrClosed).
type ConnError struct {
	Op  string // "read", "writev", "decode", "close", "poll"
	ID  int    // the id the connection was registered with
	Err error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("ioloop: conn %d: %s: %v", e.ID, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *ConnError) Unwrap() error { return e.Err }

type protocolError struct{ err error }

func (e protocolError) Error() string   { return ErrProtocol.Error() + ": " + e.err.Error() }
func (e protocolError) Unwrap() []error { return []error{ErrProtocol, e.err} }

type errCanceled struct{}

func (errCanceled) Error() string { return "ioloop: send canceled before it started" }
