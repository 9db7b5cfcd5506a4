package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boltmesh/boltmesh/heap"
	"github.com/boltmesh/boltmesh/internal/credit"
	"github.com/boltmesh/boltmesh/internal/handshake"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Sentinel errors. Test for them with errors.Is; the typed errors below wrap
// them and carry the details.
var (
	// ErrPeerLost means the connection to a peer broke (the peer died, closed,
	// or the link failed). Every pending and later operation that needs that
	// peer returns an error wrapping it; other peers keep working.
	ErrPeerLost = errors.New("boltmesh: peer lost")
	// ErrPeerClosed is the cause of an ErrPeerLost when the peer closed its
	// transport in an orderly way (it said GOODBYE) rather than dying.
	ErrPeerClosed = errors.New("boltmesh: peer closed its transport")
	// ErrReportedLost is the cause of an ErrPeerLost when this rank has
	// not seen the peer's connection break itself: a rank that closed in
	// order reported it lost (its GOODBYE names the first rank it knew to
	// be lost), and this rank learned of the loss from that report.
	ErrReportedLost = errors.New("boltmesh: peer reported lost by a rank that closed")
	// ErrClosed means the transport was closed locally. It is heap.ErrClosed
	// and rpc.ErrClosed: one value for whatever boltmesh object was closed.
	ErrClosed = heap.ErrClosed
	// ErrTimeout means RecvTimeout gave up. It also matches
	// context.DeadlineExceeded under errors.Is.
	ErrTimeout error = timeoutError{}
	// ErrReservedTag means a tag at or above TagReservedBase (or a negative
	// tag) was passed to a user operation.
	ErrReservedTag = errors.New("boltmesh: tag is reserved")
	// ErrTruncated means a message is longer than the buffer given to
	// RecvInto. The message stays queued for the next receive.
	ErrTruncated = errors.New("boltmesh: message longer than buffer")
	// ErrHandshake means a connection was refused during the HELLO
	// handshake (wrong magic, version, world, rank, mesh or key). The
	// *HandshakeError that wraps it may also wrap one of the causes below.
	ErrHandshake = handshake.ErrHandshake
	// ErrWrongKey is the cause of a *HandshakeError when the two ends of a
	// connection hold different mesh keys, or only one has a key: the
	// acceptor refused the dialer's proof of the key (a dialer sees this as
	// a refusal by the peer), or the dialer the acceptor's.
	ErrWrongKey = handshake.ErrWrongKey
	// ErrSlotTaken is the cause of a *HandshakeError when the acceptor
	// already has a connection for the rank and stream the dialer proved
	// the key for: another process joined in its place, during the mesh's
	// formation or before (a rank keeps answering late dialers for
	// Options.LateJoinWindow after its mesh formed). Without a mesh key,
	// anyone who reaches the port can do that: set one (Options.MeshKey).
	ErrSlotTaken = handshake.ErrSlotTaken
	// ErrVersion is the cause of a *HandshakeError when the peer speaks
	// another protocol version (frame.Version).
	ErrVersion = handshake.ErrVersion
	// ErrUnknownRank means a rank outside [0, world) was named.
	ErrUnknownRank = errors.New("boltmesh: unknown rank")
	// ErrLengthMismatch means a buffer's length is not the one its
	// operation needs (*LengthMismatchError): a put's or get's against its
	// SymmetricBuffer's Len, a get's reply against its dst, a barrier
	// signal's against its fixed size.
	ErrLengthMismatch = errors.New("boltmesh: length mismatch")
	// ErrOutOfBounds means a one-sided transfer's range falls outside the
	// target rank's symmetric heap: refused before it is sent
	// (*OutOfBoundsError), or by the target (*RemoteError).
	ErrOutOfBounds = errors.New("boltmesh: out of bounds")
	// ErrOptions means an Options field is invalid: this package's, or
	// rpc's (rpc.ErrOptions is this error). *OptionError names the field.
	ErrOptions = errors.New("boltmesh: invalid options")
	// ErrProtocol is the cause of a peer's loss when it sent a frame the
	// protocol does not allow there: an answer to nothing this rank asked
	// (a CTS, a DATA piece no receive took), a frame on a stripe stream
	// that carries only DATA, a malformed payload.
	ErrProtocol = errors.New("boltmesh: protocol violation")
	// ErrSingleCopy is the cause of a neighbour's loss when this rank
	// failed to copy a message from its memory (Options.SingleCopyMin)
	// after their meeting found it could: the neighbour's process is gone,
	// or it named memory it does not have.
	ErrSingleCopy = errors.New("boltmesh: single copy from a neighbour failed")
	// ErrTampered is the cause of a peer's loss when a frame on a sealed
	// link (Options.Seal) did not authenticate: altered, replayed,
	// reordered, dropped or cut short on its way, or not sealed with this
	// link's key. It is sealed.ErrTampered; a *sealed.TamperError says
	// which record.
	ErrTampered = sealed.ErrTampered
	// ErrFlowControl is the cause of a peer's loss when it sent more than
	// the flow-control credit this rank granted it (see
	// Options.MaxQueuedBytes). It is internal/credit's.
	ErrFlowControl = credit.ErrFlowControl
	// ErrNoCredit means a frame that must not wait (an RPC request sent
	// from the event loop, a short collective message) found no
	// flow-control credit for it: the peer holds Options.MaxQueuedBytes of
	// this rank's frames that it has not taken.
	ErrNoCredit = errors.New("boltmesh: no flow-control credit to send without waiting")
	// ErrNoHeartbeat is the cause (errors.Is) of a peer's loss when nothing at
	// all was heard from it for 4 Options.KeepAlive periods while this rank
	// was reading its connection: the link went silent without a FIN, RST or
	// ICMP error (host gone, cable pulled, link down), or the peer's process
	// stopped (SIGSTOP, a debugger, a hung machine) with its sockets open.
	ErrNoHeartbeat = errors.New("boltmesh: nothing heard from the peer within 4*KeepAlive")
	// ErrNotReading is the cause (errors.Is) of a star worker's loss at its
	// coordinator when the coordinator's frames for it waited unwritten
	// for 4 Options.KeepAlive periods, though the coordinator was not
	// holding its stream back: the worker reads nothing of its connection
	// (while it may still send), so the frames other workers route to it
	// pile up at the coordinator, which would otherwise hold those workers
	// back for good.
	ErrNotReading = errors.New("boltmesh: the peer read nothing of this rank's frames within 4*KeepAlive")
	// ErrCongestion means the congestion control that Options.Congestion names
	// could not be set on a connection: the kernel does not have it, does not
	// allow it (net.ipv4.tcp_allowed_congestion_control), or this system
	// cannot choose one per socket (macOS).
	ErrCongestion = errors.New("boltmesh: congestion control not available")
	// ErrBarrierSkew means a barrier signal from a later barrier arrived: the
	// ranks have not called Barrier the same number of times.
	ErrBarrierSkew = errors.New("boltmesh: barrier calls out of step across ranks")
)

// Unexported sentinels: a loss's cause, and a signal inside the transport
// that no caller sees.
var (
	// errGone is the cause of a star worker's loss of a peer that the
	// coordinator reported gone without an orderly GOODBYE.
	errGone = errors.New("the coordinator lost its connection to it")
	// errNotQueued is a try receive's "nothing has arrived".
	errNotQueued = plumb.ErrNotQueued
	// errNoPair is a star's link's answer to a neighbour pair's memory:
	// only a full mesh's links are pipes.
	errNoPair = errors.New("boltmesh: a star's link cannot take a neighbour pair's pipes")
	// errUnlinked is returned by a link asked to send before the stream
	// of the lane is registered (while the mesh forms; link.go).
	errUnlinked = errors.New("boltmesh: the peer's stream is not connected yet")
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "boltmesh: receive timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Is(target error) bool {
	return target == context.DeadlineExceeded
}

// PeerError reports an operation that failed because of a peer.
type PeerError struct {
	Op    string // "send", "recv", "barrier", ...
	Rank  int    // the peer
	Err   error  // ErrPeerLost or ErrClosed
	Cause error  // what broke the connection, when known
	// ClosedAfter is set on the errors of collective operations and
	// barriers that failed because a rank was lost: those name the first
	// rank this rank knew to be lost (Rank, and Cause), even when other
	// ranks, giving up because of it, closed their transports in order
	// before this rank saw the loss itself; ClosedAfter lists those ranks,
	// in the order this rank heard of their closes (see view.go).
	ClosedAfter []int
}

func (e *PeerError) Error() string {
	s := fmt.Sprintf("%s rank %d: %v", e.Op, e.Rank, e.Err)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	if len(e.ClosedAfter) > 0 {
		s += fmt.Sprintf(" (then ranks %v closed)", e.ClosedAfter)
	}
	return s
}

// Unwrap returns the sentinel and the cause.
func (e *PeerError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// SilenceError is the cause of a peer's loss for silence (ErrNoHeartbeat):
// nothing arrived on one stream of its link for 4 Options.KeepAlive
// periods while this rank was reading it, though the peer sends a
// HEARTBEAT on every stream it wrote nothing to for a KeepAlive.
type SilenceError struct {
	Stream string        // the stream: "data stream 0", "the control stream", or a star's "the connection"
	Silent time.Duration // from the check that last heard from it to the drop
}

func (e *SilenceError) Error() string {
	return fmt.Sprintf("boltmesh: nothing heard from the peer on %s for %v", e.Stream, e.Silent)
}

// Unwrap returns ErrNoHeartbeat.
func (e *SilenceError) Unwrap() error { return ErrNoHeartbeat }

// DroppedError is the cause of a peer's loss when the peer dropped this
// rank for a fault it found on their link and said so before it ended it
// (a DROP, frame/spec.md "Liveness"): records from this rank that did
// not authenticate there (altered, left out or replayed on the way), this
// rank's silence on a stream, a frame it took for a breach. Err is that
// fault's sentinel (ErrTampered, ErrNoHeartbeat, ErrProtocol,
// ErrFlowControl, ErrNotReading, ErrSingleCopy), nil for a fault this
// build does not know; the peer's words are in Reason.
type DroppedError struct {
	Stream int    // the stream the peer found it on: a data stream's number, or the control stream's (Options.Streams); 0 in a star
	Reason string // the peer's words
	Err    error
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("boltmesh: the peer dropped this rank for what it found on its stream %d: %s", e.Stream, e.Reason)
}

// Unwrap returns Err.
func (e *DroppedError) Unwrap() error { return e.Err }

// UnknownRankError reports a rank outside [0, NumRanks).
type UnknownRankError struct {
	Rank     int
	NumRanks int
}

func (e *UnknownRankError) Error() string {
	return fmt.Sprintf("%v: %d (world size %d)", ErrUnknownRank, e.Rank, e.NumRanks)
}

// Unwrap returns ErrUnknownRank.
func (e *UnknownRankError) Unwrap() error { return ErrUnknownRank }

// LengthMismatchError reports a buffer whose length is not the one its
// operation needs (see ErrLengthMismatch). (The collective layer's
// collective.CallLengthError is another thing: ranks that passed different
// lengths to one collective call.)
type LengthMismatchError struct {
	Expected uint64
	Got      uint64
}

func (e *LengthMismatchError) Error() string {
	return fmt.Sprintf("%v: expected %d bytes, got %d", ErrLengthMismatch, e.Expected, e.Got)
}

// Unwrap returns ErrLengthMismatch.
func (e *LengthMismatchError) Unwrap() error { return ErrLengthMismatch }

// OutOfBoundsError reports a one-sided transfer refused before it is sent:
// its range is outside rank Rank's symmetric heap, or longer than
// Options.MaxFrame. (heap.RangeError is the heap package's own check of a
// range of this process's heap.)
type OutOfBoundsError struct {
	Rank     int
	Offset   uint64
	Len      uint64
	HeapSize uint64 // the heap's size; Options.MaxFrame when Len is above it
}

func (e *OutOfBoundsError) Error() string {
	return fmt.Sprintf("%v: rank %d offset %d len %d heap %d", ErrOutOfBounds, e.Rank, e.Offset, e.Len, e.HeapSize)
}

// Unwrap returns ErrOutOfBounds.
func (e *OutOfBoundsError) Unwrap() error { return ErrOutOfBounds }

// RemoteError reports a one-sided operation the target rank refused, such
// as a put or get outside its heap. Err is ErrOutOfBounds or ErrClosed.
// (An RPC handler's error is rpc.HandlerError.)
type RemoteError struct {
	Op     string // "put" or "get"
	Rank   int    // the target
	Reason string // the target's words
	Err    error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s refused by rank %d: %v: %s", e.Op, e.Rank, e.Err, e.Reason)
}

// Unwrap returns Err.
func (e *RemoteError) Unwrap() error { return e.Err }

// TruncatedError reports a message longer than the RecvInto buffer. Nothing
// is lost: the message stays first in line for (From, Tag).
type TruncatedError struct {
	From, Tag int
	Len, Cap  int
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("%v: from rank %d tag %d: %d bytes, buffer %d", ErrTruncated, e.From, e.Tag, e.Len, e.Cap)
}

// Unwrap returns ErrTruncated.
func (e *TruncatedError) Unwrap() error { return ErrTruncated }

// HandshakeError reports a connection refused during the handshake, by
// this rank (Local true) or by the peer: Addr, the remote address; Rank,
// the rank the peer claimed or was expected to be, or -1; Local; Reason;
// and Err, a cause if any (ErrWrongKey, ErrSlotTaken, ErrVersion, ...).
// It unwraps to ErrHandshake and the cause. The handshake itself is
// internal/handshake's.
type HandshakeError = handshake.Error

// OptionError names an invalid Options field, of this package's Options
// or of rpc.Options (package rpc returns it too).
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrOptions, e.Field, e.Reason)
}

// Unwrap returns ErrOptions.
func (e *OptionError) Unwrap() error { return ErrOptions }
