package engine

import (
	"context"
	"time"
)

// TagReservedBase is the first tag reserved for boltmesh's own protocols
// (barriers, collectives, RPC). User tags are in [0, TagReservedBase).
const TagReservedBase = 0xF000_0000

// Transport is tagged two-sided messaging among the ranks of a world.
// Matching is FIFO per (source, tag). Every method is safe for concurrent
// use. Errors wrap the package's sentinels (ErrPeerLost, ErrClosed, ...).
type Transport interface {
	// Rank is this process's rank in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	// Send delivers p to rank to under tag. It returns once the bytes are
	// handed to the kernel (or queued for this rank itself); p may be
	// reused right after. A transport may hold a long message back until
	// the receiver has posted its receive (NetTransport does, past
	// Options.EagerMax: its rendezvous protocol), as MPI_Send may: two
	// ranks that each Send such a message to the other before receiving
	// wait for each other. Send from another goroutine, or use a
	// non-blocking send (NetTransport.SendNB), for such exchanges.
	Send(to, tag int, p []byte) error
	// SendContext is Send that stops waiting when ctx ends. If the message
	// is not yet committed it is dropped and ctx.Err() returned; if it is,
	// the rest is copied and sent in the background and SendContext
	// returns nil. A message sent at once is committed when its first byte
	// reaches the kernel; one held back until the receiver asks for it
	// (rendezvous), when the receiver has asked. Withdrawing a message held
	// back takes one exchange with the receiver.
	SendContext(ctx context.Context, to, tag int, p []byte) error
	// Recv returns the next message from rank from under tag. The slice is
	// the caller's.
	Recv(from, tag int) ([]byte, error)
	// RecvInto receives the next message from rank from under tag straight
	// into dst and returns its length. A message longer than dst fails with
	// a *TruncatedError and stays queued.
	RecvInto(from, tag int, dst []byte) (int, error)
	// RecvTimeout is Recv that gives up after d with an error wrapping
	// ErrTimeout; a message that arrives later goes to the next receive.
	RecvTimeout(from, tag int, d time.Duration) ([]byte, error)
	// RecvContext is Recv that gives up when ctx ends, returning ctx.Err().
	RecvContext(ctx context.Context, from, tag int) ([]byte, error)
	// RecvIntoContext is RecvInto that gives up when ctx ends.
	RecvIntoContext(ctx context.Context, from, tag int, dst []byte) (int, error)
	// Barrier returns when every rank has entered it, in O(log n) rounds.
	Barrier() error
	// BarrierContext is Barrier whose exchange with the other ranks gives
	// up when ctx ends. The barrier then stays in progress on this rank
	// and the next Barrier call resumes it, so that ranks stay in step.
	// ctx bounds only that exchange: on a NetTransport the Quiet that runs
	// first (the wait for this rank's puts to complete) does not watch ctx.
	BarrierContext(ctx context.Context) error
	// Close releases the transport; blocked operations return ErrClosed.
	// Peers see ErrPeerLost with cause ErrPeerClosed for it.
	Close() error
}
