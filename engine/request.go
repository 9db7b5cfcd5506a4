package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/ioloop"
)

// Receive request states, and reqSpun, a flag beside posted and claimed:
// a spinner watches the state (wait). A completer that finds reqSpun as
// it stores reqDone sends no token, and the spinner, seeing reqDone after
// it set the flag, takes none: a receive that its own spinner completes
// (it drove the connection that brought the message) goes through no
// channel, whose send and receive cost a runtime lock and unlock each.
// A spinner that stops before the receive is done takes the flag back,
// unless reqDone came first.
const (
	reqPosted  = iota // waiting in a tag queue
	reqClaimed        // a frame's payload is being read into it
	reqDone           // completed; done holds a token unless reqSpun was set
	reqSpun    = 1 << 8
)

// recvReq is one pending receive. It is recycled through a pool.
type recvReq struct {
	into  bool   // RecvInto: fill dst; otherwise hand over data
	dst   []byte // RecvInto destination
	from  int
	tag   int
	n     int    // bytes received
	aux   uint32 // the message header's Aux
	owned bool   // a receive on the owned range, expecting meta
	meta  uint32
	// settled: over as it was posted (plumb.Wire.Post: a queued message
	// filled it, or it failed), with no token sent: its wait takes none.
	settled bool
	data    []byte // Recv: the message
	rdv     rdvPieces
	err     error
	state   atomic.Uint32 // a state, with reqSpun
	done    chan struct{} // buffered 1: completion token
	timer   *time.Timer
}

// rdvPieces is the progress of a rendezvous message's DATA into a receive.
type rdvPieces struct {
	id      uint64 // the send id
	left    int    // bytes of DATA still to come
	seen    uint32 // the DATA pieces that came, a bit each
	pieces  int    // the number of pieces, from the first that came
	reading int    // pieces being read into the buffer now (fill.go)
	broken  error  // why a piece's stream ended before the piece was whole, if one did
}

func newRecvReq() any { return &recvReq{done: make(chan struct{}, 1)} }

// complete publishes the outcome and wakes the waiter: with the token,
// unless a spinner watches (reqSpun).
func (r *recvReq) complete(err error) {
	r.err = err
	if r.state.Swap(reqDone)&reqSpun != 0 {
		return // its spinner sees reqDone
	}
	r.done <- struct{}{}
}

// fits reports whether a message of n bytes can complete r.
func (r *recvReq) fits(n int) bool { return !r.into || n <= len(r.dst) }

// take completes r with the message in bb, which r's owner then holds: for
// RecvInto it is copied into dst and bb is recycled; for Recv the buffer
// itself becomes the caller's.
func (r *recvReq) take(bb *ioloop.Buffer, aux uint32) {
	r.fill(bb, aux)
	r.complete(nil)
}

// fill is take without the completion: for a receive that found its
// message queued, whose caller is the one waiting.
func (r *recvReq) fill(bb *ioloop.Buffer, aux uint32) {
	r.aux = aux
	if r.into {
		r.n = copy(r.dst, bb.B)
		ioloop.PutBuffer(bb)
	} else {
		r.data = bb.B
		r.n = len(bb.B)
	}
}

func (r *recvReq) truncated(n int) *TruncatedError {
	return &TruncatedError{From: r.from, Tag: r.tag, Len: n, Cap: len(r.dst)}
}

func (r *recvReq) reset() {
	r.dst, r.data, r.err, r.n, r.aux, r.owned, r.meta, r.rdv = nil, nil, nil, 0, 0, false, 0, rdvPieces{}
	r.settled = false
	r.state.Store(reqPosted)
}

// Request is a started SendNB, PutNB or GetNB. Finish it exactly once,
// with Wait, WaitContext, or a Test that reports it done; its zero value
// is a completed request. A Request is for one goroutine at a time.
type Request struct {
	t    *NetTransport
	p    *peer
	w    ioloop.Write // a put's frame
	g    *getReq      // a get's pending reply
	o    sendOp       // a send
	op   string
	err  error
	wait bool // w holds a frame to wait for
	send bool // o holds a send to wait for
}

// Wait returns when the transfer is done: for a send or a put, when its
// source may be reused; for a get, when its destination holds the data.
func (r *Request) Wait() error {
	switch {
	case r.err != nil:
		return r.err
	case r.send:
		r.send = false
		return r.t.finishSend(r.o, nil)
	case r.g != nil:
		err := r.t.waitGet(r.p, r.g)
		r.g = nil
		return err
	case r.wait:
		r.wait = false
		if err := r.w.Wait(); err != nil {
			return r.t.connErr(r.p, r.op, err)
		}
	}
	return nil
}

// Done reports, without waiting, whether the transfer is over: Wait
// would return at once.
func (r *Request) Done() bool {
	switch {
	case r.err != nil:
		return true
	case r.send:
		return r.o.over()
	case r.g != nil:
		return r.g.state.Load() == reqDone
	case r.wait:
		return r.w.Done()
	}
	return true
}

// Test finishes the request if it is over, as Wait would, and reports
// whether it was (MPI_Test): with done false it is still in progress, and
// must still be finished.
func (r *Request) Test() (done bool, err error) {
	if !r.Done() {
		return false, nil
	}
	return true, r.Wait()
}

// WaitContext is Wait that stops waiting when ctx ends. A send or a put
// not yet committed is then dropped, and WaitContext returns ctx's error;
// one committed is finished in the background, the rest of its source
// copied, and WaitContext returns nil: the source may be reused either
// way. A send is committed once its first byte is in the kernel, or, for
// one that waits for its receiver (rendezvous), once the receiver asked
// for it; a put once its first byte is in the kernel. A get whose reply
// has not begun to arrive is withdrawn (ctx's error; its destination is
// not written after WaitContext returns); one whose reply is being read
// is waited for.
func (r *Request) WaitContext(ctx context.Context) error {
	cancel := ctx.Done()
	if cancel == nil || r.err != nil {
		return r.Wait()
	}
	var err error
	switch {
	case r.send:
		r.send = false
		err = r.t.finishSend(r.o, cancel)
	case r.g != nil:
		g := r.g
		r.g = nil
		err = r.t.waitGetCancel(r.p, g, cancel)
	case r.wait:
		r.wait = false
		if err = r.w.WaitCancel(cancel); err != nil {
			err = r.t.connErr(r.p, r.op, err)
		}
	}
	if errors.Is(err, ioloop.ErrCanceled) {
		return ctx.Err()
	}
	return err
}

// over reports, without waiting, whether a send is over: its frame
// written, or its rendezvous answered and its DATA written.
func (o *sendOp) over() bool {
	switch {
	case o.s != nil:
		return o.s.over()
	case o.p == nil:
		return true
	}
	return o.w.Done()
}

// over reports whether s is answered and, if it was asked for, its DATA
// written. The state is stored after the DATA's writes are started
// (deliverCTS), so that they are seen once it is.
func (s *rdvSend) over() bool {
	switch s.state.Load() {
	case rdvWaiting:
		return false
	case rdvWriting:
		for i := range s.k {
			if !s.ws[i].Done() {
				return false
			}
		}
	}
	return true
}
