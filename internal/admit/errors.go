package admit

import (
	"errors"
	"fmt"
	"net"
)

// ErrBusy is the cause of a refusal when MaxPending handshakes were
// already under way.
var ErrBusy = errors.New("admit: too many handshakes under way")

// RejectError is a refused connection.
type RejectError struct {
	Addr net.Addr // the remote address
	Err  error    // why: the handshake's or the admit function's error, or ErrBusy
}

func (e *RejectError) Error() string { return fmt.Sprintf("refused %v: %v", e.Addr, e.Err) }

// Unwrap returns the cause.
func (e *RejectError) Unwrap() error { return e.Err }
