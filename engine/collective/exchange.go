package collective

import (
	"context"
	"sync"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// An exchange sends this rank's part to one rank and receives another's
// from one, at the same time: the send is started without waiting, the
// receive runs, and then the send is waited for, so that two ranks
// exchanging large messages never wait for each other, and no goroutine
// hand-off sits in a step's latency. Between neighbours whose parts fit a
// mailbox it goes through the pair's mailbox (mail.go); a long one goes
// in pieces (exchangeChunks), whose reduction overlaps the transfer.

// exchange sends out to rank to and receives from rank from into in,
// concurrently, and returns the received length.
func (c *Comm) exchange(ctx context.Context, to, from int, tag uint32, out, in []byte) (int, error) {
	if err := c.sending(ctx); err != nil {
		return 0, err
	}
	n, err := c.swap(ctx, to, from, tag, out, in)
	return n, explain(wireErr(err))
}

// swap is exchange's work, its errors the transport's.
func (c *Comm) swap(ctx context.Context, to, from int, tag uint32, out, in []byte) (int, error) {
	if to == from && max(len(out), len(in)) <= plumb.MailboxMax && to >= 0 && to < len(c.boxes) {
		if mb := c.boxes[to]; mb != nil {
			return c.mail(ctx, to, mb, tag, out, in)
		}
	}
	held := c.wire.Hold(from, true)
	h, err := c.wire.Send(ctx, to, tag, c.meta, out, plumb.SendCopy)
	c.unhold(from, held)
	if err != nil {
		return 0, err
	}
	n, err := c.take(ctx, from, tag, in, plumb.All)
	// A failed receive ends the call: what has not gone out is dropped.
	if _, _, serr := c.wire.Wait(to, h, plumb.Waiting{How: nowIf(err != nil) | plumb.All}); serr != nil && err == nil {
		err = serr
	}
	return n, err
}

// unhold ends a hold on rank's link that held.
func (c *Comm) unhold(rank int, held bool) {
	if held {
		c.wire.Hold(rank, false)
	}
}

// chunkWindow is how many pieces of an exchange in pieces are in flight
// each way beyond the one being received (bench/RESULTS.md, "Figures
// moved out of code comments", CollWindow).
const chunkWindow = 1

// chunkState is the reusable state of one exchangeChunks call.
type chunkState struct {
	writes []plumb.Handle
	recvs  []plumb.Handle
	ctx    context.Context // the call's

	// The sending side: out goes to rank to in pieces of chunk bytes, of
	// which the first sent have been started.
	to      int
	tag     uint32
	out     []byte
	chunk   int
	sent    int
	settled int  // the pieces before it are settled (settleCopies)
	local   bool // onChunk failed (rather than the transport)
}

var chunkStates = sync.Pool{New: func() any { return new(chunkState) }}

// exchangeChunks is exchange in pieces, of chunkWith(to) bytes out and
// chunkWith(from) in (the sender's, with the same length), whole elements
// of esz bytes. Every piece's receive is posted at once, so that the
// event loop reads each one straight into its place in in as it arrives;
// at most chunkWindow pieces are in flight each way. After each piece
// has arrived, in order, onChunk(off, n) runs on this goroutine while the
// next ones travel: the reduction of one piece overlaps the transfer of
// the next. onChunk may write out[off:off+n] (an exchange that reduces
// into what it sends): out's pieces there have left by then
// (settleCopies). An error from onChunk stops the exchange and is
// returned; in's length must be what the sender sends, or the exchange
// fails with ErrMismatch.
func (c *Comm) exchangeChunks(ctx context.Context, to, from int, tag uint32, out, in []byte, esz int, onChunk func(off, n int) error) error {
	if err := c.sending(ctx); err != nil {
		return err
	}
	return explain(wireErr(c.swapChunks(ctx, to, from, tag, out, in, c.chunkWith(to, esz), c.chunkWith(from, esz), onChunk)))
}

// swapChunks is exchangeChunks' work, its errors the transport's.
func (c *Comm) swapChunks(ctx context.Context, to, from int, tag uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error {
	st := chunkStates.Get().(*chunkState)
	defer chunkStates.Put(st)
	st.to, st.tag, st.out, st.chunk, st.sent, st.settled, st.ctx = to, tag, out, outChunk, 0, 0, ctx
	held := c.wire.Hold(from, true)
	err := c.postChunks(st, from, in, inChunk)
	if err == nil {
		err = c.sendUpTo(st, chunkWindow)
	}
	c.unhold(from, held)
	if err == nil {
		err = c.waitChunks(st, from, len(in), inChunk, onChunk)
	}
	// After this rank's own onChunk failed, the peer still expects the
	// rest: send it. After a transport error (a lost peer, ctx) the call is
	// over: drop what was not sent rather than wait for a peer that may
	// never read it.
	if err == nil || st.local {
		if serr := c.sendUpTo(st, pieces(len(out), outChunk)); err == nil {
			err = serr
		}
	}
	for i, h := range st.recvs {
		c.drop(from, h) // not waited for (after an error): no later frame lands in in
		st.recvs[i] = plumb.Handle{}
	}
	now := nowIf(err != nil && !st.local)
	for i, h := range st.writes {
		if _, _, serr := c.wire.Wait(to, h, plumb.Waiting{How: now | plumb.All}); serr != nil && err == nil {
			err = serr
		}
		st.writes[i] = plumb.Handle{}
	}
	st.writes, st.recvs, st.out, st.local, st.ctx = st.writes[:0], st.recvs[:0], nil, false, nil
	return err
}

// settleCopies finishes the pieces of st.out sent by single copy
// (Handle.Late) that hold any of its first end bytes: onChunk may write
// out where in's piece lands, and such a piece is read from out by the
// receiver whenever it takes it, not as its send starts as a frame's is.
// A finished piece's slot is left a zero handle.
func (c *Comm) settleCopies(st *chunkState, end int) error {
	for k := st.settled; k < len(st.writes) && k*st.chunk < end; k++ {
		if h := st.writes[k]; h.Late() {
			st.writes[k] = plumb.Handle{}
			if _, _, err := c.wire.Wait(st.to, h, plumb.Waiting{Ctx: st.ctx}); err != nil {
				return err
			}
		}
		st.settled = k + 1
	}
	return nil
}

// sendUpTo starts sending the pieces of st.out before piece k.
func (c *Comm) sendUpTo(st *chunkState, k int) error {
	k = min(k, pieces(len(st.out), st.chunk))
	for ; st.sent < k; st.sent++ {
		i := st.sent
		h, err := c.wire.Send(st.ctx, st.to, st.tag, c.meta, st.out[i*st.chunk:min((i+1)*st.chunk, len(st.out))], plumb.SendCopy)
		if err != nil {
			return err
		}
		st.writes = append(st.writes, h)
	}
	return nil
}

// postChunks posts one receive per piece of in, in order, so that the
// event loop fills each straight from the socket.
func (c *Comm) postChunks(st *chunkState, from int, in []byte, chunk int) error {
	for i := range pieces(len(in), chunk) {
		h, err := c.wire.Post(from, st.tag, c.meta, in[i*chunk:min((i+1)*chunk, len(in))], false)
		if err != nil {
			return err
		}
		st.recvs = append(st.recvs, h)
	}
	return nil
}

// pieces is the number of frames a message of n bytes is sent as, in
// pieces of chunk bytes: at least one, so that an empty message is a frame.
func pieces(n, chunk int) int {
	return max(1, (n+chunk-1)/chunk)
}

// waitChunks waits for the posted pieces in order, checking each one's
// length, and runs onChunk for each.
func (c *Comm) waitChunks(st *chunkState, from, inLen, chunk int, onChunk func(off, n int) error) error {
	for i, h := range st.recvs {
		st.recvs[i] = plumb.Handle{}
		n, _, err := c.wire.Wait(from, h, plumb.Waiting{Ctx: st.ctx, How: plumb.All})
		if err != nil {
			return err
		}
		// The piece's length as posted: a rendezvous message is cut to its
		// own length when a receive takes it.
		if want := min((i+1)*chunk, inLen) - i*chunk; n != want {
			return &plumb.CollLengthError{Rank: from, Tag: st.tag, Want: want, Got: n}
		}
		held := c.wire.Hold(from, true)
		err = c.sendUpTo(st, i+1+chunkWindow)
		if err == nil && n > 0 {
			err = c.settleCopies(st, i*chunk+n)
		}
		if err == nil && n > 0 {
			if err = onChunk(i*chunk, n); err != nil {
				st.local = true
			}
		}
		c.unhold(from, held)
		if err != nil {
			return err
		}
	}
	return nil
}
