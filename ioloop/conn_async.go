package ioloop

import (
	"github.com/boltmesh/boltmesh/frame"
)

// Write is a frame queued by Start. Its zero value is a completed write.
type Write struct {
	c   *Conn
	r   *sendReq
	err error
}

// Start queues one frame like Send but returns at once: payload must stay
// untouched until Wait returns. Frames keep the order of their Start and
// Send calls.
func (c *Conn) Start(h *frame.Header, payload []byte) (Write, error) {
	h.Length = uint64(len(payload))
	r, done, err := c.sendDirect(h, payload, false, false)
	if done {
		return Write{}, err
	}
	if r == nil {
		if r, err = c.enqueue(h, payload, 0, false, false); err != nil {
			return Write{}, err
		}
	}
	c.flush()
	return Write{c: c, r: r}, nil
}

// Done reports, without waiting, whether Wait would return at once.
func (w Write) Done() bool { return w.r == nil || len(w.r.done) > 0 }

// Wait returns once every byte of the frame is in the kernel (or taken by
// a Buffering stream), or with the connection's *ConnError. Call it
// exactly once per Write from Start.
func (w Write) Wait() error {
	if w.r == nil {
		return w.err
	}
	if spin := w.c.loop.spinFor(); spin > 0 && len(w.r.done) == 0 {
		w.c.spinWrite(w.r, spin)
	}
	err := <-w.r.done
	w.c.recycle(w.r)
	return err
}

// WaitCancel is Wait that stops waiting when cancel is closed: a frame
// not yet started is dropped (ErrCanceled), and one partly written gets its
// own copy of the rest, which is sent in the background (nil). Call it, or
// Wait, exactly once per Write from Start.
func (w Write) WaitCancel(cancel <-chan struct{}) error {
	if w.r == nil || cancel == nil {
		return w.Wait()
	}
	err, detached := w.c.await(w.r, cancel)
	if !detached {
		w.c.recycle(w.r)
	}
	return err
}

// WaitDetach is Wait that stops waiting when cancel is closed without
// dropping anything: a frame not yet fully written, started or not, gets
// its own copy of the rest and is sent in the background, and WaitDetach
// returns nil. Frames that must all arrive or none (the pieces of one
// striped message) use it. Call it, or Wait, exactly once per Write.
func (w Write) WaitDetach(cancel <-chan struct{}) error {
	if w.r == nil || cancel == nil {
		return w.Wait()
	}
	select {
	case err := <-w.r.done:
		w.c.recycle(w.r)
		return err
	case <-cancel:
	}
	if w.c.detach(w.r) {
		return nil
	}
	err := <-w.r.done
	w.c.recycle(w.r)
	return err
}

// Post queues one frame and returns at once; nobody waits for it. payload
// must stay valid until it is written (memory that outlives the
// connection, such as a mapped heap), or be copied first with copyPayload.
// Handlers use it to answer from inside Deliver without blocking.
func (c *Conn) Post(h *frame.Header, payload []byte, copyPayload bool) error {
	h.Length = uint64(len(payload))
	r, done, err := c.sendDirect(h, payload, true, copyPayload)
	if done {
		return err
	}
	if r == nil {
		if _, err := c.enqueue(h, payload, 0, true, copyPayload); err != nil {
			return err
		}
	}
	c.flush()
	return nil
}

// PostBuffer is Post for a payload held in a pooled buffer (GetBuffer),
// which the connection takes over: it returns bb to the pool once the
// frame is written or has failed, and then calls done, if not nil, with
// the payload's length. done runs exactly once, on whichever goroutine
// finished the frame and possibly with the connection's locks held: it
// must be quick and must not call the connection's methods. A star's
// coordinator forwards frames with it: read once into bb, written out
// with writev, never copied.
func (c *Conn) PostBuffer(h *frame.Header, bb *Buffer, done func(n int)) error {
	n := len(bb.B)
	h.Length = uint64(n)
	r, fin, err := c.sendDirect(h, bb.B, true, false)
	if fin {
		PutBuffer(bb)
		if done != nil {
			done(n)
		}
		return err
	}
	if r == nil {
		if _, err = c.enqueueOwned(h, bb.B, 0, true, false, bb, done); err != nil {
			PutBuffer(bb)
			if done != nil {
				done(n)
			}
			return err
		}
	} else {
		c.adopt(r, bb, done) // written in part: the rest is queued
	}
	c.flush()
	return nil
}

// adopt hands bb and done to r, the queued rest of a frame written in
// part, unless r already completed (a flush finished it in between), in
// which case they are settled here.
func (c *Conn) adopt(r *sendReq, bb *Buffer, done func(n int)) {
	w := &c.wr
	w.qmu.Lock()
	live := r.async && len(r.payload) > 0 && &r.payload[0] == &bb.B[0] && w.queued(r)
	if live {
		r.owned, r.onDone = bb, done
	}
	w.qmu.Unlock()
	if !live {
		n := len(bb.B)
		PutBuffer(bb)
		if done != nil {
			done(n)
		}
	}
}

// Queue queues one frame, its payload copied, without writing it: the next
// Send, Post, Flush or Poll on the connection writes it together with
// everything else queued, in one writev. A server answering a burst of
// requests queues every answer but the last. Someone must flush: a frame
// left queued waits.
func (c *Conn) Queue(h *frame.Header, payload []byte) error {
	h.Length = uint64(len(payload))
	_, err := c.enqueue(h, payload, 0, true, true)
	return err
}

// Flush writes what is queued, if anything.
func (c *Conn) Flush() {
	if c.wr.nqueued.Load() > 0 {
		c.flush()
	}
}
