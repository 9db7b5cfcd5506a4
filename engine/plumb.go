package engine

import (
	"context"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The hooks that package collective and package rpc need beyond the
// public API (see internal/plumb) are methods of plumbing, a
// *NetTransport by another name, so that they stay out of NetTransport's
// method set. A NetTransport carries them in the plumb.Carrier it embeds
// under the unexported name carrier: that makes *NetTransport, and any
// value that embeds one (a *thunderbolt.Transport), a plumb.Source, which
// the constructors of those packages take.

// carrier is plumb.Carrier under a name that keeps the embedded field
// unexported.
type carrier = plumb.Carrier

var _ plumb.Source = (*NetTransport)(nil)

// plumbing is a NetTransport's hooks; each method forwards to the
// unexported method of NetTransport that does the work.
type plumbing NetTransport

var (
	_ plumb.Wire           = (*plumbing)(nil)
	_ plumb.Service        = (*plumbing)(nil)
	_ plumb.ServiceBatcher = (*plumbing)(nil)
	_ plumb.ServiceSpinner = (*plumbing)(nil)
)

func (h *plumbing) t() *NetTransport { return (*NetTransport)(h) }

// SetServiceHandler implements plumb.Service.
func (h *plumbing) SetServiceHandler(hd plumb.ServiceHandler) error {
	return h.t().setServiceHandler(hd)
}

// SendFrame implements plumb.Service.
func (h *plumbing) SendFrame(ctx context.Context, to int, f plumb.ServiceFrame, p []byte) error {
	return h.t().sendService(ctx, to, f, p)
}

// PostFrame implements plumb.Service.
func (h *plumbing) PostFrame(to int, f plumb.ServiceFrame, p []byte) error {
	return h.t().postService(to, f, p)
}

// RequestMax implements plumb.Service.
func (h *plumbing) RequestMax(to int) (uint64, bool) { return h.t().requestMaxTo(to) }

// QueueFrame implements plumb.ServiceBatcher.
func (h *plumbing) QueueFrame(to int, f plumb.ServiceFrame, p []byte) error {
	return h.t().queueService(to, f, p)
}

// FlushFrames implements plumb.ServiceBatcher.
func (h *plumbing) FlushFrames(to int) { h.t().flushService(to) }

// SpinFrames implements plumb.ServiceSpinner.
func (h *plumbing) SpinFrames(from int, done func() bool) bool { return h.t().spinService(from, done) }

// peerCredit is a peer as the plumb.Credit of the RPC payloads it sent.
type peerCredit peer

// FreeCredit implements plumb.Credit.
func (c *peerCredit) FreeCredit(n uint64) { (*peer)(c).freeCredit(n) }
