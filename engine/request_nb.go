package engine

import (
	"context"
	"errors"

	"github.com/boltmesh/boltmesh/ioloop"
)

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
