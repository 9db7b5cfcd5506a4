package engine

import (
	"context"
	"sync"
	"time"

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
	_ plumb.Coll           = (*plumbing)(nil)
	_ plumb.CollOwned      = (*plumbing)(nil)
	_ plumb.CollAsync      = (*plumbing)(nil)
	_ plumb.Service        = (*plumbing)(nil)
	_ plumb.ServiceBatcher = (*plumbing)(nil)
	_ plumb.ServiceSpinner = (*plumbing)(nil)
)

func (h *plumbing) t() *NetTransport { return (*NetTransport)(h) }

// SendColl implements plumb.Coll.
func (h *plumbing) SendColl(ctx context.Context, to int, tag, meta uint32, p []byte) error {
	return h.t().sendOwned(ctx, to, tag, meta, p)
}

// RecvCollInto implements plumb.Coll.
func (h *plumbing) RecvCollInto(ctx context.Context, from int, tag, meta uint32, dst []byte) (int, error) {
	return h.t().recvOwnedInto(ctx, from, tag, meta, dst)
}

// TryRecvCollInto implements plumb.Coll.
func (h *plumbing) TryRecvCollInto(from int, tag, meta uint32, dst []byte) (int, bool, error) {
	return h.t().tryRecvOwnedInto(from, tag, meta, dst)
}

// ExchangeColl implements plumb.Coll.
func (h *plumbing) ExchangeColl(ctx context.Context, to, from int, tag, meta uint32, out, in []byte) (int, error) {
	return h.t().exchangeOwned(ctx, to, from, tag, meta, out, in)
}

// Neighbour implements plumb.Coll.
func (h *plumbing) Neighbour(rank int) bool { return h.t().neighbour(rank) }

// ExchangeCollChunks implements plumb.Coll.
func (h *plumbing) ExchangeCollChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error {
	return h.t().exchangeOwnedChunks(ctx, to, from, tag, meta, out, in, outChunk, inChunk, onChunk)
}

// OwnColl implements plumb.CollOwned.
func (h *plumbing) OwnColl(newOwner func() plumb.CollOwner) plumb.CollOwner {
	return h.t().own(newOwner)
}

// AbandonColl implements plumb.CollOwned.
func (h *plumbing) AbandonColl(tag uint32, why uint64) { h.t().abandonOwned(tag, why) }

// DropUnwanted implements plumb.CollOwned.
func (h *plumbing) DropUnwanted(first, n uint32) { h.t().dropUnwanted(first, n) }

// StartColl implements plumb.CollAsync. The send it returns is pooled:
// it goes back to the pool when Wait or Drop finishes it.
func (h *plumbing) StartColl(ctx context.Context, to int, tag, meta uint32, p []byte) (plumb.CollSend, error) {
	s, err := h.t().startOwnedSend(ctx, to, tag, meta, p)
	if err != nil {
		return nil, err
	}
	b := ownedSends.Get().(*pooledSend)
	b.ownedSend = s
	return b, nil
}

// PostColl implements plumb.CollAsync.
func (h *plumbing) PostColl(to int, tag, meta uint32, p []byte) error {
	return h.t().postOwned(to, tag, meta, p)
}

// RecvCollFrom implements plumb.CollAsync.
func (h *plumbing) RecvCollFrom(ctx context.Context, from int, tag, meta uint32, dst []byte, deadline, inFlightUntil time.Time) (int, error) {
	return h.t().recvOwnedFromPeer(ctx, from, tag, meta, dst, deadline, inFlightUntil)
}

// PostCollFrom implements plumb.CollAsync. The receive it returns is
// pooled: it goes back to the pool when Wait or Drop finishes it.
func (h *plumbing) PostCollFrom(from int, tag, meta uint32, dst []byte) (plumb.CollRecv, error) {
	r, err := h.t().postOwnedFrom(from, tag, meta, dst)
	if err != nil {
		return nil, err
	}
	b := ownedRecvs.Get().(*pooledRecv)
	b.postedRecv = r
	return b, nil
}

// pooledRecv is a postedRecv as a plumb.CollRecv, pooled as pooledSend is.
type pooledRecv struct{ postedRecv }

var ownedRecvs = sync.Pool{New: func() any { return new(pooledRecv) }}

// Wait implements plumb.CollRecv.
func (b *pooledRecv) Wait(ctx context.Context, deadline, inFlightUntil time.Time) (int, error) {
	n, err := b.postedRecv.wait(ctx, deadline, inFlightUntil)
	b.free()
	return n, err
}

// WaitColl implements plumb.CollRecv.
func (b *pooledRecv) WaitColl(ctx context.Context) (int, error) {
	n, err := b.postedRecv.waitColl(ctx)
	b.free()
	return n, err
}

// Cancel implements plumb.CollRecv.
func (b *pooledRecv) Cancel() {
	b.postedRecv.cancel()
	b.free()
}

// free returns b to the pool.
func (b *pooledRecv) free() {
	b.postedRecv = postedRecv{}
	ownedRecvs.Put(b)
}

// Drop implements plumb.CollRecv.
func (b *pooledRecv) Drop() bool {
	reusable := b.postedRecv.drop()
	b.free()
	return reusable
}

// pooledSend is a ownedSend as a plumb.CollSend: a pointer, so that
// handing it out as an interface allocates nothing once the pool is warm.
type pooledSend struct{ ownedSend }

var ownedSends = sync.Pool{New: func() any { return new(pooledSend) }}

// Wait implements plumb.CollSend.
func (b *pooledSend) Wait(ctx context.Context) error {
	err := b.ownedSend.Wait(ctx)
	b.free()
	return err
}

// Drop implements plumb.CollSend.
func (b *pooledSend) Drop() {
	b.ownedSend.Drop()
	b.free()
}

// free returns b to the pool.
func (b *pooledSend) free() {
	b.ownedSend = ownedSend{}
	ownedSends.Put(b)
}

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
