package plumb

import (
	"context"

	"github.com/boltmesh/boltmesh/ioloop"
)

// RPC is what package rpc needs from a transport: RPC_REQ and RPC_REPLY
// frames, which the transport carries and whose meaning is the RPC
// layer's.
type RPC interface {
	// SetRPCHandler installs h as the receiver of RPC frames; nil
	// uninstalls it. Requests that arrived before are handed to h first,
	// in their order of arrival and before any later frame, and
	// RPCPeerLost is called for peers already lost; replies that arrive
	// while no handler is installed are dropped. It fails with
	// engine.ErrRPCHandlerSet when a handler is already installed.
	SetRPCHandler(h RPCHandler) error
	// SendRPC sends one RPC frame with payload p to rank to, which must
	// not be this rank (engine.ErrSelfRPC). A request first waits for the
	// peer's flow-control credit. It returns once the frame is handed to
	// the kernel, or with ctx's error if no byte of it was sent by then.
	SendRPC(ctx context.Context, to int, f RPCFrame, p []byte) error
	// PostRPC queues one RPC frame for rank to and returns at once: p is
	// copied. It is how an RPCHandler answers from inside HandleRPC, which
	// must not block. Frames keep their order with those of SendRPC. A
	// request fails with engine.ErrNoCredit rather than wait for credit.
	PostRPC(to int, f RPCFrame, p []byte) error
	// RPCRequestMax returns the largest request payload rank to holds
	// (for this rank: the largest it holds): the largest whose frame.Cost
	// is at most half the window it grants (engine.Options.MaxQueuedBytes;
	// 16 MiB with the default 64 MiB). ok is false while rank to's window
	// is not known yet. A larger request fails SendRPC, PostRPC and
	// QueueRPC with a *RequestSizeError, and nothing is sent.
	RPCRequestMax(to int) (max uint64, ok bool)
}

// RPCBatcher is implemented by an RPC that can leave frames unwritten
// until a flush: the answers to a burst of requests then take one writev
// instead of one each.
type RPCBatcher interface {
	// QueueRPC is PostRPC that leaves the frame unwritten until FlushRPC,
	// or the next frame to rank to, writes it along with everything else
	// queued for that rank. The caller must make sure a flush follows.
	QueueRPC(to int, f RPCFrame, p []byte) error
	// FlushRPC writes what QueueRPC left queued for rank to.
	FlushRPC(to int)
}

// RPCSpinner is implemented by an RPC that lets a caller read a
// connection itself while it waits for a reply, taking the event loop's
// wake-up out of the round trip.
type RPCSpinner interface {
	// SpinRPC drives the connection to rank from until done reports true
	// or no byte has arrived from the peer for engine.Options.Spin, and
	// reports done's last answer. RPC frames read meanwhile are handed to
	// the handler on this goroutine. With spinning disabled, or for this
	// rank, it only asks done.
	SpinRPC(from int, done func() bool) bool
}

// RPCFrame is the header of one RPC_REQ or RPC_REPLY frame, as the RPC
// layer sees it. The transport carries it; its meaning is the RPC
// layer's.
type RPCFrame struct {
	Reply bool   // RPC_REPLY rather than RPC_REQ
	Error bool   // a reply whose payload is an error (RPC_REPLY only)
	ID    uint64 // request id, echoed by the reply
	Tag   uint32 // RPC_REQ: the RPC layer's (name length); replies: free
	Aux   uint32 // free for the RPC layer (deadline, status code)
	// Dropped, on a received frame, is the length of a payload that was
	// discarded unread: a request too large for this rank to hold (above
	// half of engine.Options.MaxQueuedBytes), or a frame the handler's
	// RPCPayloadFilter refused. The payload is then empty.
	Dropped uint64
}

// RPCHandler receives the RPC frames of a transport. HandleRPC is called
// on the transport's event loop, RPCPeerLost there or on the goroutine
// that installs the handler: both must return quickly and never block
// (hand the work to another goroutine).
type RPCHandler interface {
	// HandleRPC receives one RPC frame from rank from. It owns payload.
	HandleRPC(from int, f RPCFrame, payload RPCPayload)
	// RPCPeerLost is called when a peer is lost or the transport closes;
	// err wraps engine.ErrPeerLost or engine.ErrClosed. Every reply still
	// expected from it will never come. It may be called more than once
	// for a peer.
	RPCPeerLost(from int, err error)
}

// RPCPayloadFilter is implemented by an RPCHandler that wants to refuse
// payloads before they are read: an RPC frame for which Accept reports
// false has its n-byte payload discarded unread (RPCFrame.Dropped), and
// the handler then gets the frame with an empty payload, to answer a
// request that is too large or to ignore a reply nobody waits for. It is
// called on the event loop, like HandleRPC.
type RPCPayloadFilter interface {
	Accept(from int, f RPCFrame, n uint64) bool
}

// Credit is what a received request's payload holds until Release: its
// sender's flow-control credit, which FreeCredit gives back.
type Credit interface {
	FreeCredit(n uint64)
}

// RPCPayload is the payload of a received RPC frame, held in a pooled
// buffer that the receiver owns until it calls Release. A request's
// payload also holds the sender's flow-control credit until then, so an
// RPC handler that keeps requests holds their senders back.
type RPCPayload struct {
	bb     *ioloop.Buffer
	credit Credit // a request's sender
	cost   uint64 // the credit it holds
}

// NewRPCPayload returns the payload held in bb (nil: empty), which holds
// cost of credit's credit until Release. The transport calls it.
func NewRPCPayload(bb *ioloop.Buffer, credit Credit, cost uint64) RPCPayload {
	return RPCPayload{bb: bb, credit: credit, cost: cost}
}

// Bytes returns the payload; it is valid until Release.
func (p RPCPayload) Bytes() []byte {
	if p.bb == nil {
		return nil
	}
	return p.bb.B
}

// Release returns the buffer to the pool and the credit to the sender.
// Call it once.
func (p RPCPayload) Release() {
	if p.bb != nil {
		ioloop.PutBuffer(p.bb)
	}
	if p.cost > 0 {
		p.credit.FreeCredit(p.cost)
	}
}
