package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Messaging on the owned tag range (owner.go): plumb.CollTags tags in the
// reserved range, apart from users' tags and from the barrier's, lent
// whole to one owner (package collective). Every message on it carries a
// meta word the owner chooses (package collective: its call's operation,
// element type and reduction) in the frame header's Aux field, and every
// receive names the meta it expects: a message with another one fails the
// receive with a *plumb.CollMismatchError, so that ranks whose calls
// differ learn of it instead of mixing bytes. The range's operations are
// reported as ownedOp.

// ownedTagBase is the first tag of the owned range.
const ownedTagBase = TagReservedBase + 0x0100_0000

// ownedOp is the operation errors on the owned range name: what users
// call its owner's operations.
const ownedOp = "collective"

// sendOwned is Send on the owned range: tag is in [0, plumb.CollTags), and
// meta travels with the message.
func (t *NetTransport) sendOwned(ctx context.Context, to int, tag, meta uint32, p []byte) error {
	if tag >= plumb.CollTags {
		return ErrReservedTag
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := t.sendAux(ctx.Done(), to, ownedTagBase+tag, meta, p)
	if errors.Is(err, ioloop.ErrCanceled) {
		return ctx.Err()
	}
	return t.lossErr(err)
}

// ownedWait is how a receive on the owned range waits: until ctx ends, or
// any peer is lost (the owner's calls need every rank) or closed leaving it
// unanswerable (closedInRange), for a message carrying meta.
func ownedWait(t *NetTransport, ctx context.Context, meta uint32) waitOpts {
	w := ctxWait(ctx, ownedOp)
	w.anyLost, w.meta, w.checkMeta = true, meta, true
	w.ownerClose = t.owner() != nil
	return w
}

// recvOwnedInto is RecvIntoContext on the owned range for a message
// carrying meta. Because the owner's calls need every rank, it also
// gives up as soon as any peer is lost, with ErrPeerLost naming the first
// rank lost (see PeerError.ClosedAfter).
func (t *NetTransport) recvOwnedInto(ctx context.Context, from int, tag, meta uint32, dst []byte) (int, error) {
	if tag >= plumb.CollTags {
		return 0, ErrReservedTag
	}
	n, _, err := t.recv(from, ownedTagBase+tag, dst, true, ownedWait(t, ctx, meta))
	return n, t.lossErr(ownedErr(err))
}

// ownedErr reports a message on the owned range longer than its buffer as the
// length mismatch it is.
func ownedErr(err error) error {
	if err == nil {
		return nil
	}
	var te *TruncatedError
	if errors.As(err, &te) {
		return &plumb.CollLengthError{Rank: te.From, Tag: uint32(te.Tag) - ownedTagBase, Want: te.Cap, Got: te.Len}
	}
	return err
}

// tryRecvOwnedInto takes a message from rank from under tag tag of the owned range
// into dst if one has arrived, without waiting: ok is false if none has.
func (t *NetTransport) tryRecvOwnedInto(from int, tag, meta uint32, dst []byte) (n int, ok bool, err error) {
	if tag >= plumb.CollTags {
		return 0, false, ErrReservedTag
	}
	w := waitOpts{op: ownedOp, try: true, meta: meta, checkMeta: true}
	n, _, err = t.recv(from, ownedTagBase+tag, dst, true, w)
	if err == errNotQueued {
		return 0, false, nil
	}
	return n, err == nil, t.lossErr(ownedErr(err))
}

// exchangeOwned sends out to rank to and receives from rank from into in,
// under tag tag of the owned range, at the same time: the send is started without
// waiting, the receive runs, and then the send is waited for. Two ranks
// exchanging large messages therefore never wait for each other, and no
// goroutine hand-off sits in a step's latency.
func (t *NetTransport) exchangeOwned(ctx context.Context, to, from int, tag, meta uint32, out, in []byte) (int, error) {
	if tag >= plumb.CollTags {
		return 0, ErrReservedTag
	}
	if err := ctx.Err(); err != nil {
		return 0, err // nothing is sent for a step whose ctx has ended
	}
	if to == from && max(len(out), len(in)) <= plumb.MailboxMax {
		if mb := t.mailboxOf(to); mb != nil {
			return t.exchangeMail(ctx, t.peer(to), mb, tag, meta, out, in)
		}
	}
	held := t.holdPolling(t.peer(from), laneData)
	o, err := t.startOwned(ctx, to, tag, meta, out, true)
	t.releasePolling(t.peer(from), laneData, held)
	if err != nil {
		return 0, t.lossErr(err)
	}
	n, rerr := t.recvOwnedInto(ctx, from, tag, meta, in)
	var cancel <-chan struct{}
	if rerr != nil {
		cancel = closedChan // the call is over: drop what has not gone out
	}
	if serr := t.finishSend(o, cancel); serr != nil && rerr == nil {
		rerr = t.lossErr(serr)
	}
	return n, rerr
}

// startOwned starts sending one message on the owned range to rank to;
// copyEager as startSend's.
func (t *NetTransport) startOwned(ctx context.Context, to int, tag, meta uint32, out []byte, copyEager bool) (sendOp, error) {
	o, err := t.startSend(ctx.Done(), to, ownedTagBase+tag, meta, out, copyEager)
	if errors.Is(err, ioloop.ErrCanceled) {
		err = ctx.Err()
	}
	return o, err
}

// chunkState is the reusable state of one exchangeOwnedChunks call.
type chunkState struct {
	writes []sendOp
	recvs  []*recvReq
	ctx    context.Context // the call's

	// The sending side: out goes to rank to in pieces of chunk bytes, of
	// which the first sent have been started.
	to        int
	tag, meta uint32
	out       []byte
	chunk     int
	sent      int
	settled   int  // the pieces before it are settled (settleCopies)
	local     bool // onChunk failed (rather than the transport)

	inLen int // the receiving side: the length of in
}

// closedChan is a cancel channel that has already fired.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var chunkStates = sync.Pool{New: func() any { return new(chunkState) }}

// exchangeOwnedChunks is exchangeOwned in pieces: out is sent as consecutive
// frames of at most outChunk bytes, and in is received in frames of at
// most inChunk (the sender's outChunk, with the same length). Every piece's receive is
// posted at once, so the event loop reads each one straight into its place
// in in as it arrives; at most plumb.CollWindow pieces are in flight each way.
// After each piece has arrived, in order, onChunk(off, n) runs on this
// goroutine while the next ones travel: the reduction of one piece
// overlaps the transfer of the next. onChunk may write out[off:off+n]
// (an exchange that reduces into what it sends): out's pieces there have
// left by then (settleCopies). An error from onChunk stops the exchange
// and is returned.
func (t *NetTransport) exchangeOwnedChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error {
	if tag >= plumb.CollTags {
		return ErrReservedTag
	}
	if outChunk <= 0 {
		outChunk = max(len(out), 1)
	}
	if inChunk <= 0 {
		inChunk = max(len(in), 1)
	}
	if err := t.checkRank(from); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st := chunkStates.Get().(*chunkState)
	defer chunkStates.Put(st)
	st.to, st.tag, st.meta, st.out, st.chunk, st.sent, st.settled, st.ctx = to, tag, meta, out, outChunk, 0, 0, ctx
	st.inLen = len(in)
	held := t.holdPolling(t.peer(from), laneData)
	err := t.postChunks(st, from, ownedTagBase+tag, meta, in, inChunk)
	if err == nil {
		err = t.sendUpTo(st, plumb.CollWindow)
	}
	t.releasePolling(t.peer(from), laneData, held)
	if err == nil {
		err = t.waitChunks(ctx, st, from, ownedTagBase+tag, meta, inChunk, onChunk)
	}
	// After this rank's own onChunk failed, the peer still expects the
	// rest: send it. After a transport error (a lost peer, ctx) the call is
	// over: drop what was not sent rather than wait for a peer that may
	// never read it.
	if err == nil || st.local {
		if serr := t.sendUpTo(st, pieces(len(out), outChunk)); err == nil {
			err = serr
		}
	}
	t.dropChunks(st, from)
	var cancel <-chan struct{}
	if err != nil && !st.local {
		cancel = closedChan
	}
	for i, o := range st.writes {
		if serr := t.finishSend(o, cancel); serr != nil && err == nil && !errors.Is(serr, ioloop.ErrCanceled) {
			err = serr
		}
		st.writes[i] = sendOp{}
	}
	st.writes, st.out, st.local, st.ctx = st.writes[:0], nil, false, nil
	return t.lossErr(err)
}

// settleCopies finishes the pieces of st.out sent by single copy that
// hold any of its first end bytes: onChunk may write out where in's piece
// lands (an exchange that reduces into what it sends), and a piece by
// single copy is read from out by the receiver whenever it takes it, not
// when its send starts as a piece through a ring is. A finished piece's
// slot is left a completed send.
func (t *NetTransport) settleCopies(st *chunkState, end int) error {
	for k := st.settled; k < len(st.writes) && k*st.chunk < end; k++ {
		if o := st.writes[k]; o.s != nil && o.s.copy != 0 {
			st.writes[k] = sendOp{}
			if err := t.finishSend(o, st.ctx.Done()); err != nil {
				if errors.Is(err, ioloop.ErrCanceled) {
					err = st.ctx.Err()
				}
				return err
			}
		}
		st.settled = k + 1
	}
	return nil
}

// sendUpTo starts sending the pieces of st.out before piece k.
func (t *NetTransport) sendUpTo(st *chunkState, k int) error {
	k = min(k, pieces(len(st.out), st.chunk))
	for ; st.sent < k; st.sent++ {
		i := st.sent
		o, err := t.startOwned(st.ctx, st.to, st.tag, st.meta, st.out[i*st.chunk:min((i+1)*st.chunk, len(st.out))], true)
		if err != nil {
			return err
		}
		st.writes = append(st.writes, o)
	}
	return nil
}

// postChunks posts one receive per piece of in, in order, so that the
// event loop fills each straight from the socket.
func (t *NetTransport) postChunks(st *chunkState, from int, tag, meta uint32, in []byte, chunk int) error {
	p := t.peer(from)
	for i := range pieces(len(in), chunk) {
		r := t.pools.reqs.Get().(*recvReq)
		r.into, r.dst, r.from, r.tag = true, in[i*chunk:min((i+1)*chunk, len(in))], from, int(tag)
		r.owned, r.meta = true, meta
		st.recvs = append(st.recvs, r)
		if posted, err := p.match(r, false, true, ownedOp); !posted {
			r.complete(err) // or r.err, nil, as the queued message filled it
		}
	}
	return nil
}

// pieces is the number of frames a message of n bytes is sent as, in
// pieces of chunk bytes: at least one, so that an empty message is a frame.
func pieces(n, chunk int) int {
	return max(1, (n+chunk-1)/chunk)
}

// waitChunks waits for the posted pieces in order, checking each one's
// length and meta, and runs onChunk for each.
func (t *NetTransport) waitChunks(ctx context.Context, st *chunkState, from int, tag, meta uint32, chunk int, onChunk func(off, n int) error) error {
	p := t.peer(from)
	w := ownedWait(t, ctx, meta)
	for i, r := range st.recvs {
		err := t.wait(p, r, w)
		st.recvs[i] = nil
		if err == nil {
			err = r.err
		}
		// The piece's length as posted: a rendezvous message cuts r.dst
		// to its own length when a receive takes it (claimRdv).
		n, aux, want := r.n, r.aux, min((i+1)*chunk, st.inLen)-i*chunk
		r.reset()
		t.pools.reqs.Put(r)
		switch {
		case err != nil:
			return ownedErr(err)
		case aux != meta:
			return &plumb.CollMismatchError{Rank: from, Tag: tag - ownedTagBase, Want: meta, Got: aux}
		case n != want:
			return &plumb.CollLengthError{Rank: from, Tag: tag - ownedTagBase, Want: want, Got: n}
		}
		held := t.holdPolling(p, laneData)
		err = t.sendUpTo(st, i+1+plumb.CollWindow)
		if err == nil && n > 0 {
			err = t.settleCopies(st, i*chunk+n)
		}
		if err == nil && n > 0 {
			if err = onChunk(i*chunk, n); err != nil {
				st.local = true
			}
		}
		t.releasePolling(p, laneData, held)
		if err != nil {
			return err
		}
	}
	return nil
}

// holdPolling tells lane n of p's link that this goroutine polls it
// (link.polling) while it does something else first, before it waits
// there: sends a step's data, or reduces the piece before. What the
// neighbour publishes meanwhile then rings no bell, which would wake
// this process's event loop for bytes this goroutine reads itself
// anyway, at a cost that shows in an exchange's time between neighbours
// (bench/RESULTS.md, "Figures moved out of code comments", holdPolling).
// releasePolling ends it, and must come before any sleep: a
// wait's own spin holds the lane while it polls, and asks for a bell
// before it sleeps.
// holdPolling reports whether it held the lane.
func (t *NetTransport) holdPolling(p *peer, n lane) bool {
	if !p.up() || t.spinBudget() <= 0 {
		return false
	}
	p.link.polling(n, true)
	return true
}

// releasePolling ends holdPolling, if it held the lane, as a goroutine
// that will poll again soon (link.polled): the wait that follows asks for
// a bell if it sleeps.
func (t *NetTransport) releasePolling(p *peer, n lane, held bool) {
	if held {
		p.link.polled(n)
	}
}

// dropChunks withdraws the pieces' receives not waited for (after an
// error), so that no later frame is read into the caller's buffer.
func (t *NetTransport) dropChunks(st *chunkState, from int) {
	p := t.peer(from)
	for i, r := range st.recvs {
		if r == nil {
			continue
		}
		if r.state.Load() != reqDone { // never waited: no reqSpun
			t.withdraw(p, r, nil)
		} else {
			<-r.done
		}
		r.reset()
		t.pools.reqs.Put(r)
		st.recvs[i] = nil
	}
	st.recvs = st.recvs[:0]
}

// isOwnedTag reports whether a wire tag is in the owned range.
func isOwnedTag(tag uint32) bool { return tag-ownedTagBase < plumb.CollTags }
