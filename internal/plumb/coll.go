package plumb

import (
	"context"
	"time"

	"github.com/boltmesh/boltmesh/internal/link/shm"
)

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
	// ExchangeCollChunks is ExchangeColl in frames: out goes in frames of
	// at most outChunk bytes, in arrives in frames of at most inChunk (the
	// sender's outChunk), at most engine.CollWindow in flight each way
	// beyond the one being received. It calls onChunk(off, n) on this
	// goroutine for each received piece of in, in order, as soon as it
	// has arrived, while later pieces are still in flight; it may write
	// out[off:off+n], whose pieces have left by then. An error from
	// onChunk ends the exchange and is returned. in's length must be what
	// the sender sends, or the exchange fails with engine.ErrCollMismatch.
	ExchangeCollChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error
	// Neighbour reports whether rank is a neighbour: a rank on this host
	// whose frames go through shared memory (engine.Options.SharedMemory).
	// Both ends of a pair agree, and it does not change once the
	// transport is made.
	Neighbour(rank int) bool
}

// CollOwned is implemented by a Coll whose tag range has an owner: the
// layer above (package collective), which decides which arrivals it still
// wants and when a receive in the range must fail, so that the transport
// knows nothing of what the owner does with the range (call numbers,
// steps). The owner is installed once and stays for the transport's life.
type CollOwned interface {
	// OwnColl installs the owner that newOwner returns, if none is
	// installed yet, and returns the owner installed: a later call returns
	// the first owner without calling newOwner, so that every user of one
	// transport shares it.
	OwnColl(newOwner func() CollOwner) CollOwner
	// AbandonColl tells every peer, without waiting, with an ABANDON frame
	// on tag carrying why, that this rank gave up what tag belongs to: the
	// peer's owner hears of it (CollOwner.Abandoned), and its receives from
	// this rank are checked again (CollOwner.Posting). Nothing is sent to
	// lost peers. The frame travels on the control stream, so that it never
	// waits behind a message nobody receives.
	AbandonColl(tag uint32, why uint64)
	// DropUnwanted drops every message queued on the n tags of the range
	// from first (first+n at most CollTags; all of them: 0, CollTags) that
	// the owner no longer wants (CollOwner.Wanted false), releasing its
	// credit (the sender of an announced one is told to send nothing). It
	// looks at no more tags than it is given or than hold messages: a peer
	// that runs calls ahead may have a message queued on each of many
	// thousands of tags.
	DropUnwanted(first, n uint32)
}

// CollOwner is the owner of a transport's collective tag range
// (CollOwned). Tags are relative to the range, in [0, engine.CollTags).
//
// Lock rule: every method but Progress is called with the lock of the
// peer named by from held (Closed with the transport's record of closed
// peers held), from the event loop or from a receiving goroutine: a
// method must not block, allocate on the path that returns nil or true,
// or call into the transport.
type CollOwner interface {
	// Wanted reports whether a message from rank from for tag is still
	// wanted. It is asked as the message arrives, before any receive takes
	// it, and of the messages queued when DropUnwanted runs: an unwanted
	// one is dropped.
	Wanted(from int, tag uint32) bool
	// Posting returns the error a receive from rank from for tag,
	// expecting meta, fails with before it is posted (nothing has arrived
	// for it), or nil to post it. It is asked again of every receive from
	// from waiting in the range after from's ABANDON arrived.
	Posting(from int, tag, meta uint32) error
	// Conflict returns the error that a receive from rank from for tag
	// posted, expecting postedMeta, fails with because a message from from
	// for another tag, arrived, with meta arrivedMeta, is queued: the two
	// ranks are at different points of their use of the range. nil: no
	// conflict. It is asked when such a message is queued while the
	// receive waits, and when the receive is posted while such a message
	// is queued.
	Conflict(from int, tag, postedMeta, arrived, arrivedMeta uint32) error
	// Abandoned is told of an ABANDON from rank from on tag, with its why.
	Abandoned(from int, tag uint32, why uint64)
	// Progress returns the value this rank's GOODBYE carries (frame Aux),
	// which the transport does not read.
	Progress() uint32
	// Closed reports whether a peer that closed in order, telling
	// progress (its Progress when it closed), has left receives in the
	// range unanswerable: the receives waiting in the range that give up
	// on a lost peer then fail with an error wrapping engine.ErrPeerLost
	// (cause engine.ErrPeerClosed).
	Closed(progress uint32) bool
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
	// lost (or ctx ends, or deadline passes, with an error wrapping
	// engine.ErrTimeout; zero: no deadline), not when any other rank is
	// lost or closes. If it gives up while the message's bytes are being
	// read into dst, it waits for them until inFlightUntil (zero: for as
	// long as they take); once that passes too, it returns an
	// *InFlightError, and dst stays the transport's until the
	// message is in or from is lost. (Times, not contexts: a deadline
	// allreduce allocates nothing.)
	RecvCollFrom(ctx context.Context, from int, tag, meta uint32, dst []byte, deadline, inFlightUntil time.Time) (int, error)
	// PostCollFrom posts a receive from rank from under tag into dst and
	// returns without waiting: the transport reads the message straight
	// into dst when it comes (a message above the eager limit moves only
	// once a receive takes it), while the caller waits for others. dst is
	// the transport's until the CollRecv's Wait or Drop says otherwise.
	// What the receive meets at once (a queued message, a longer one, the
	// peer lost, the owner's refusal) is its Wait's outcome.
	PostCollFrom(from int, tag, meta uint32, dst []byte) (CollRecv, error)
}

// CollRecv is a receive posted ahead of its wait (CollAsync.PostCollFrom).
// Finish it with exactly one of Wait, WaitColl, Cancel or Drop, after
// which it must not be used again: its transport may reuse it.
type CollRecv interface {
	// Wait is RecvCollFrom's wait for the posted receive: it gives up only
	// when its peer is lost, ctx ends or deadline passes (zero: no
	// deadline), waits for bytes being read in until inFlightUntil, and
	// then returns an *InFlightError, dst staying the transport's
	// until the message is in or the peer is lost.
	Wait(ctx context.Context, deadline, inFlightUntil time.Time) (int, error)
	// WaitColl is RecvCollInto's wait for the posted receive: it also gives
	// up as soon as any peer is lost, and waits for a message being read
	// in whatever ends the wait, so that dst is free when it returns.
	WaitColl(ctx context.Context) (int, error)
	// Cancel ends the receive: at once if no message has claimed it, else
	// once that message is in or its peer is lost, so that dst is free
	// when it returns.
	Cancel()
	// Drop ends the receive without waiting: it is withdrawn if no message
	// has claimed it. It reports whether dst may be reused; false while a
	// message's bytes are still being read into it (dst then stays the
	// transport's, as after an InFlightError).
	Drop() bool
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

// CollTags is the number of tags in the collective tag space.
const CollTags = 1 << 24

// CollWindow is how many pieces of a chunked collective exchange
// (exchangeCollChunks) may be in flight in each direction beyond the one
// being received. It is 1 because a full socket buffer stalls the sender:
// with one piece in flight the buffers never fill, and the reduction of
// one piece still overlaps the transfer of the next (bench/RESULTS.md,
// "Figures moved out of code comments", CollWindow).
const CollWindow = 1

// MailboxMax is the longest part of an exchange that goes through a
// neighbours' mailbox (internal/link/shm); longer ones are frames.
const MailboxMax = shm.MailboxMax
