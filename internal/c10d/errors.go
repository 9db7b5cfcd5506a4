package c10d

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Test for them with errors.Is; *OpError (and, for
// ErrOption, *DialOptionError) wraps them.
// An operation whose deadline passed wraps os.ErrDeadlineExceeded, one
// whose context ended wraps the context's error.
var (
	// ErrTooLong means a sized string (an answer, or a key or value to
	// send) is longer than Options.MaxValue.
	ErrTooLong = errors.New("c10d: string longer than the limit")
	// ErrProtocol means the store answered something the protocol does
	// not allow there, such as a WAIT answer other than STOP_WAITING.
	ErrProtocol = errors.New("c10d: unexpected answer from the store")
	// ErrNotStore means the peer does not answer as a TCPStore of either
	// protocol: it spoke first, answered nonsense, or said nothing.
	ErrNotStore = errors.New("c10d: not a TCPStore")
	// ErrBroken means an earlier operation on the client failed, leaving
	// the stream at an unknown point; Dial again.
	ErrBroken = errors.New("c10d: client broken by an earlier failure")
	// ErrClosed means the client was closed.
	ErrClosed = errors.New("c10d: client closed")
	// ErrOption means an Options field is out of range; the
	// *DialOptionError wrapping it names the field.
	ErrOption = errors.New("c10d: bad option")
)

// OpError is a failed operation: which, on which key, at which store.
type OpError struct {
	Op   string // "dial", "set", "get", "wait", "check", "add", "delete", "numkeys"
	Key  string // the first key involved, if any
	Addr string // the store's address
	Err  error
}

func (e *OpError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("c10d %s %q at %s: %v", e.Op, e.Key, e.Addr, e.Err)
	}
	return fmt.Sprintf("c10d %s at %s: %v", e.Op, e.Addr, e.Err)
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// DialOptionError is an Options field that Dial refuses. (It is this
// package's, for c10d.Options; engine.OptionError is the engine's.)
type DialOptionError struct {
	Field  string // "Timeout", "ProbeTimeout", "MaxValue" or "Protocol"
	Reason string
}

func (e *DialOptionError) Error() string { return "c10d: Options." + e.Field + " " + e.Reason }

// Unwrap returns ErrOption.
func (e *DialOptionError) Unwrap() error { return ErrOption }

// errNotSent marks a request refused before any of it was written: the
// stream is still in step.
var errNotSent = errors.New("not sent")

// errNoAnswer means a probe got nothing: the peer hung up or stayed
// silent, as a store of the other protocol does.
var errNoAnswer = errors.New("no answer")

// joined is errors.Join on one line.
type joined []error

func (j joined) Error() string {
	s := make([]string, len(j))
	for i, err := range j {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (j joined) Unwrap() []error { return j }
