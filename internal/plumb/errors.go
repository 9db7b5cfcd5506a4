package plumb

import (
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
)

// RequestSizeError is returned by RPC.SendRPC, PostRPC and QueueRPC for a
// request larger than its receiver can hold (RPC.RPCRequestMax): nothing
// is sent. It unwraps to frame.ErrTooLarge.
type RequestSizeError struct {
	Rank  int    // the receiver
	Size  uint64 // the request's payload, in bytes
	Limit uint64 // the largest the receiver holds
}

func (e *RequestSizeError) Error() string {
	return fmt.Sprintf("RPC request of %d bytes to rank %d, which holds at most %d", e.Size, e.Rank, e.Limit)
}

// Unwrap returns frame.ErrTooLarge.
func (e *RequestSizeError) Unwrap() error { return frame.ErrTooLarge }
