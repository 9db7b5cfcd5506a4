package plumb

import "context"

// Coll is messaging on a transport's collective tag space, apart from
// users' tags: tags in [0, engine.CollTags), and every message carries its
// call's meta (a word the collective layer derives from the operation,
// element type and reduction). A receive names the meta it expects; a
// message with another one fails it with an error wrapping
// engine.ErrCollMismatch. Package engine/collective is written against it.
type Coll interface {
	// SendColl sends p to rank to under tag, with meta, returning once p
	// may be reused.
	SendColl(ctx context.Context, to int, tag, meta uint32, p []byte) error
	// RecvCollInto receives the next message from rank from under tag into
	// dst and returns its length; a longer one, or one whose meta differs,
	// is an error wrapping engine.ErrCollMismatch. It also gives up as soon
	// as any peer is lost (a collective needs every rank).
	RecvCollInto(ctx context.Context, from int, tag, meta uint32, dst []byte) (int, error)
	// TryRecvCollInto is RecvCollInto that takes only a message that has
	// already arrived, and reports ok false when none has.
	TryRecvCollInto(from int, tag, meta uint32, dst []byte) (n int, ok bool, err error)
	// ExchangeColl sends out to rank to and receives from rank from into
	// in, concurrently (so that two ranks exchanging large messages never
	// wait for each other), and returns the received length.
	ExchangeColl(ctx context.Context, to, from int, tag, meta uint32, out, in []byte) (int, error)
	// ExchangeCollChunks is ExchangeColl in frames of at most chunk bytes
	// (at most engine.CollWindow in flight each way beyond the one being
	// received), calling onChunk(off, n) on this goroutine for each
	// received piece of in, in order, as soon as it has arrived, while
	// later pieces are still in flight. An error from onChunk ends the
	// exchange and is returned. in's length must be what the sender sends,
	// or the exchange fails with engine.ErrCollMismatch.
	ExchangeCollChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, chunk int, onChunk func(off, n int) error) error
}

// CollCalls is implemented by a Coll whose collective receives give up
// when a peer closed in order without completing the call in progress (a
// closed peer tells which calls it completed), or gave it up. The
// collective layer numbers its calls 1, 2, ... (wrapping past 2^32-1 to
// 1), reports each one it begins and each one that succeeds, and abandons
// each one that fails. Call k owns the 256 collective tags from
// ((k-1) mod 65536) * 256 on; once call k began, messages for the calls
// before it are dropped, those that arrive and those queued.
type CollCalls interface {
	// BeginCollCall records that this rank began call number call; calls
	// must not overlap.
	BeginCollCall(call uint32)
	// EndCollCall records that this rank completed call number call: a
	// GOODBYE sent later tells the peers so.
	EndCollCall(call uint32)
	// AbandonCollCall tells every peer, without waiting, that this rank
	// gave up the call that owns tag: their receives from it for that call
	// fail with an error wrapping engine.ErrCollAbandoned (an
	// *engine.CollAbandonError that carries why, which the transport
	// carries without reading it). Nothing is sent to lost peers.
	AbandonCollCall(tag uint32, why uint64)
}

// CollAsync is implemented by a Coll whose sends need not wait and whose
// receives can care about one peer only: what an algorithm needs that
// must never be held up by a slow, stopped or lost rank (the deadline
// allreduce).
type CollAsync interface {
	// StartColl starts sending p to rank to under tag with meta and returns
	// without waiting for the bytes to go out (only, if need be, for
	// flow-control credit, until ctx ends): p must stay untouched until
	// the CollSend's Wait or Drop returns. A message above the eager
	// limit waits at the receiver, unread, until a receive takes it.
	StartColl(ctx context.Context, to int, tag, meta uint32, p []byte) (CollSend, error)
	// PostColl sends a short message (at most a quarter of the eager
	// limit) without waiting at all: p is copied. It fails with an error
	// wrapping engine.ErrNoCredit if the receiver holds so much of this
	// rank's that no credit is left for it.
	PostColl(to int, tag, meta uint32, p []byte) error
	// RecvCollFrom is RecvCollInto that gives up only when rank from is
	// lost (or ctx ends), not when any other rank is lost or closes. If
	// ctx ends while the message's bytes are being read into dst, it waits
	// for them while inFlight lasts (nil: for as long as they take); once
	// inFlight ends too, it returns an *engine.InFlightError, and dst
	// stays the transport's until the message is in or from is lost.
	RecvCollFrom(ctx context.Context, from int, tag, meta uint32, dst []byte, inFlight context.Context) (int, error)
	// TryRecvCollFrom is RecvCollFrom that takes only a message that has
	// already arrived (ok false: none has), and waits for its bytes while
	// inFlight lasts.
	TryRecvCollFrom(from int, tag, meta uint32, dst []byte, inFlight context.Context) (n int, ok bool, err error)
}

// CollSend is a collective message being sent (CollAsync.StartColl).
// Finish it with exactly one of Wait or Drop, after which it must not be
// used again: its transport may reuse it.
type CollSend interface {
	// Done reports, without waiting, whether the send is over: Wait or
	// Drop would return at once.
	Done() bool
	// Wait waits until the message is sent (its receiver took it, for one
	// that waits for that), or ctx ends: then it is dropped if it is not
	// yet committed, and Wait returns ctx's error.
	Wait(ctx context.Context) error
	// Drop ends the send: a message the receiver has not taken is
	// withdrawn or, if no byte of it went out, dropped; one already
	// committed is sent whole in the background. It returns once p may be
	// reused.
	Drop()
}
