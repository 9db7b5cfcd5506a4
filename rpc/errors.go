package rpc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Sentinel errors. Test for them with errors.Is; the typed errors below
// wrap them and carry the rank and function name.
var (
	// ErrFunctionNotFound means the rank called has no handler under the
	// name. The *CallError wrapping it names both.
	ErrFunctionNotFound = errors.New("rpc: function not found")
	// ErrPeerLost is engine.ErrPeerLost: the connection to the rank called
	// broke, and every call pending on it fails with an error wrapping it
	// (and the transport's *engine.PeerError as the cause).
	ErrPeerLost = engine.ErrPeerLost
	// ErrClosed means this agent, or the agent of the rank called, is
	// closed (or closing and no longer taking calls); the *CallError's Rank
	// says which. A call still pending when its agent closes fails with it.
	// It is engine.ErrClosed (and heap.ErrClosed).
	ErrClosed = engine.ErrClosed
	// ErrBusy means the rank called had its request queue full: the call
	// was refused without running. Retrying later may succeed.
	ErrBusy = errors.New("rpc: server busy")
	// ErrTooLarge means a request or a reply exceeds a size limit
	// (Options.MaxRequestSize, Options.MaxReplySize); see *SizeError.
	ErrTooLarge = errors.New("rpc: message too large")
	// ErrExists is returned by Register for a name already registered.
	ErrExists = errors.New("rpc: function already registered")
	// ErrBadName is returned for an empty name or one longer than
	// MaxNameLen bytes.
	ErrBadName = errors.New("rpc: invalid function name")
	// ErrNilHandler is returned by Register and Replace for a nil handler.
	ErrNilHandler = errors.New("rpc: nil handler")
	// ErrOptions is engine.ErrOptions: an Options field is invalid.
	// NewAgent returns it as an *engine.OptionError that names the field.
	ErrOptions = engine.ErrOptions
	// ErrAgentExists is returned by NewAgent for a transport that already
	// carries an agent that is not closed.
	ErrAgentExists = plumb.ErrHandlerSet
	// ErrProtocol means a peer sent a frame this agent cannot parse.
	ErrProtocol = errors.New("rpc: protocol error")
	// ErrUnsupportedTransport is returned (wrapped) by NewAgent for a
	// transport that carries no RPC frames: a nil one (Transport's type
	// keeps every other kind out as the program compiles).
	ErrUnsupportedTransport = errors.New("rpc: transport carries no RPC frames")
)

// CallError reports a call that failed without its handler returning an
// error: the function was not found, the server was busy, the peer was
// lost, an agent closed, a size limit or the deadline was exceeded. Err is
// the sentinel (or context.DeadlineExceeded, context.Canceled, a
// *SizeError); Cause, when set, is what the transport reported.
type CallError struct {
	Rank  int    // the rank called
	Name  string // the function called
	Err   error
	Cause error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("rpc: call %q on rank %d: %s", e.Name, e.Rank, strings.TrimPrefix(e.Err.Error(), "rpc: "))
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns Err and, when set, Cause.
func (e *CallError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// HandlerError is the error a handler returned, or its panic, as the caller
// sees it: only the message crosses the wire. (engine.RemoteError is
// another thing: a one-sided transfer the target rank refused.)
type HandlerError struct {
	Rank     int    // the rank whose handler failed
	Name     string // the function
	Message  string // the handler's err.Error(), or the panic value
	Panicked bool   // the handler panicked (the server recovered and keeps serving)
}

func (e *HandlerError) Error() string {
	what := "failed"
	if e.Panicked {
		what = "panicked"
	}
	return fmt.Sprintf("rpc: handler %q on rank %d %s: %s", e.Name, e.Rank, what, e.Message)
}

// SizeError reports a request or reply above its limit. It unwraps to
// ErrTooLarge.
type SizeError struct {
	What  string // "request" or "reply"
	Size  int    // bytes (for a request: name and arguments)
	Limit int    // the limit in force where it was checked
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%v: %s of %d bytes, limit %d", ErrTooLarge, e.What, e.Size, e.Limit)
}

// Unwrap returns ErrTooLarge.
func (e *SizeError) Unwrap() error { return ErrTooLarge }
