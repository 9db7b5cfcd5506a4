package plumb

import (
	"context"

	"github.com/boltmesh/boltmesh/ioloop"
)

// Service is the transport's offer of its two service frame kinds
// (frame.KindRPCReq and frame.KindRPCReply: requests, which hold their
// receiver's flow-control credit until taken, and replies, which need
// none) to the one service that gives them meaning. Package rpc is that
// service; the transport knows nothing of what a frame's ID, Tag and Aux
// mean. It holds the requests that arrive before a handler is installed
// (within each sender's credit) and hands them over in order.
type Service interface {
	// SetServiceHandler installs h as the receiver of service frames;
	// nil uninstalls it. Requests that arrived before are handed to h
	// first, in their order of arrival and before any later frame, and
	// ServicePeerLost is called for peers already lost; replies that
	// arrive while no handler is installed are dropped. It fails with
	// ErrHandlerSet when a handler is already installed.
	SetServiceHandler(h ServiceHandler) error
	// SendFrame sends one service frame with payload p to rank to, which
	// must not be this rank (ErrSelfFrame). A request first waits for the
	// peer's flow-control credit. It returns once the frame is handed to
	// the kernel, or with ctx's error if no byte of it was sent by then.
	SendFrame(ctx context.Context, to int, f ServiceFrame, p []byte) error
	// PostFrame queues one service frame for rank to and returns at once:
	// p is copied. It is how a ServiceHandler answers from inside
	// HandleFrame, which must not block. Frames keep their order with
	// those of SendFrame. A request fails with engine.ErrNoCredit rather
	// than wait for credit.
	PostFrame(to int, f ServiceFrame, p []byte) error
	// RequestMax returns the largest request payload rank to holds (for
	// this rank: the largest it holds): the largest whose frame.Cost is at
	// most half the window it grants (engine.Options.MaxQueuedBytes; 16
	// MiB with the default 64 MiB). ok is false while rank to's window is
	// not known yet. A larger request fails SendFrame, PostFrame and
	// QueueFrame with a *RequestSizeError, and nothing is sent.
	RequestMax(to int) (max uint64, ok bool)
}

// ServiceBatcher is implemented by a Service that can leave frames
// unwritten until a flush: the answers to a burst of requests then take
// one writev instead of one each.
type ServiceBatcher interface {
	// QueueFrame is PostFrame that leaves the frame unwritten until
	// FlushFrames, or the next frame to rank to, writes it along with
	// everything else queued for that rank. The caller must make sure a flush follows.
	QueueFrame(to int, f ServiceFrame, p []byte) error
	// FlushFrames writes what QueueFrame left queued for rank to.
	FlushFrames(to int)
}

// ServiceSpinner is implemented by a Service that lets a caller read a
// connection itself while it waits for a reply, taking the event loop's
// wake-up out of the round trip.
type ServiceSpinner interface {
	// SpinFrames drives the connection to rank from until done reports
	// true or no byte has arrived from the peer for engine.Options.Spin,
	// and reports done's last answer. Service frames read meanwhile are
	// handed to the handler on this goroutine. With spinning disabled, or for this
	// rank, it only asks done.
	SpinFrames(from int, done func() bool) bool
}

// ServiceFrame is the header of one service frame (RPC_REQ or RPC_REPLY
// on the wire), as the service sees it. The transport carries it; its
// meaning is the service's.
type ServiceFrame struct {
	Reply bool   // a reply (RPC_REPLY) rather than a request (RPC_REQ)
	Error bool   // a reply whose payload is an error (replies only)
	ID    uint64 // free for the service (package rpc: the request id)
	Tag   uint32 // free for the service (package rpc: the name's length)
	Aux   uint32 // free for the service (package rpc: deadline, status)
	// Dropped, on a received frame, is the length of a payload that was
	// discarded unread: a request too large for this rank to hold (above
	// half of engine.Options.MaxQueuedBytes), or a frame the handler's
	// ServiceFilter refused. The payload is then empty.
	Dropped uint64
}

// ServiceHandler receives the service frames of a transport. HandleFrame
// is called on the transport's event loop, ServicePeerLost there or on
// the goroutine that installs the handler: both must return quickly and
// never block (hand the work to another goroutine).
type ServiceHandler interface {
	// HandleFrame receives one service frame from rank from. It owns
	// payload.
	HandleFrame(from int, f ServiceFrame, payload ServicePayload)
	// ServicePeerLost is called when a peer is lost or the transport
	// closes; err wraps engine.ErrPeerLost or engine.ErrClosed. Every reply still
	// expected from it will never come. It may be called more than once
	// for a peer.
	ServicePeerLost(from int, err error)
}

// ServiceFilter is implemented by a ServiceHandler that wants to refuse
// payloads before they are read: a service frame for which Accept reports
// false has its n-byte payload discarded unread (ServiceFrame.Dropped),
// and the handler then gets the frame with an empty payload, to answer a
// request that is too large or to ignore a reply nobody waits for. It is
// called on the event loop, like HandleFrame.
type ServiceFilter interface {
	Accept(from int, f ServiceFrame, n uint64) bool
}

// Credit is what a received request's payload holds until Release: its
// sender's flow-control credit, which FreeCredit gives back.
type Credit interface {
	FreeCredit(n uint64)
}

// ServicePayload is the payload of a received service frame, held in a
// pooled buffer that the receiver owns until it calls Release. A
// request's payload also holds the sender's flow-control credit until
// then, so a handler that keeps requests holds their senders back.
type ServicePayload struct {
	bb     *ioloop.Buffer
	credit Credit // a request's sender
	cost   uint64 // the credit it holds
}

// NewServicePayload returns the payload held in bb (nil: empty), which
// holds cost of credit's credit until Release. The transport calls it.
func NewServicePayload(bb *ioloop.Buffer, credit Credit, cost uint64) ServicePayload {
	return ServicePayload{bb: bb, credit: credit, cost: cost}
}

// Bytes returns the payload; it is valid until Release.
func (p ServicePayload) Bytes() []byte {
	if p.bb == nil {
		return nil
	}
	return p.bb.B
}

// Release returns the buffer to the pool and the credit to the sender.
// Call it once.
func (p ServicePayload) Release() {
	if p.bb != nil {
		ioloop.PutBuffer(p.bb)
	}
	if p.cost > 0 {
		p.credit.FreeCredit(p.cost)
	}
}
