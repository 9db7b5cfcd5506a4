package engine

import "github.com/boltmesh/boltmesh/ioloop"

// Request is a started SendNB, PutNB or GetNB. Wait for it exactly once;
// its zero value is a completed request.
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
