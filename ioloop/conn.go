package ioloop

import (
	"math"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
)

// Conn is one connection owned by a Loop, over a Stream. Send, Progress,
// Pause, Resume and Close are safe for concurrent use.
type Conn struct {
	loop *Loop
	s    Stream
	fd   int // s.Fd(), which the poller watches
	id   int
	h    Handler

	// The Stream's optional capabilities, asked once (newConn); nil
	// where it has none.
	poller  Poller
	bell    Belled
	limiter DeferLimiter
	holder  Buffering
	drainer Drainer // the handler, if it is told when a drain ends

	failed     atomic.Pointer[ConnError] // set once, by fail
	releasable atomic.Bool               // fail is done with the fd
	closed     bool                      // fd closed; guarded by both sides owned (rd.own, wr.own)
	woken      atomic.Bool               // in the loop's wake-up queue, not served yet (wake.go)

	rd reader
	wr writer
}

func newConn(l *Loop, s Stream, id int, h Handler) *Conn {
	c := &Conn{loop: l, s: s, fd: s.Fd(), id: id, h: h}
	c.poller, _ = s.(Poller)
	c.bell, _ = s.(Belled)
	c.limiter, _ = s.(DeferLimiter)
	c.holder, _ = s.(Buffering)
	c.drainer, _ = h.(Drainer)
	c.rd.buf = make([]byte, l.opts.StagingSize)
	c.wr.bufs = make([][]byte, 0, maxIovecs)
	return c
}

// ID returns the id the connection was registered with.
func (c *Conn) ID() int { return c.id }

// Err returns the error that ended the connection, or nil while it works.
func (c *Conn) Err() error {
	if e := c.failed.Load(); e != nil {
		return e
	}
	return nil
}

// Close shuts the connection down; pending sends and the handler see a
// *ConnError wrapping ErrClosed. Closing a failed connection does nothing.
// It may be called from Handler methods; Handler.Closed may then run after
// Close returns, on the goroutine that was reading.
func (c *Conn) Close() error {
	c.fail("close", ErrClosed)
	return nil
}

// fail ends the connection once, with the first cause: it is marked
// failed (nothing more is read or sent), a Failer handler is told, then
// the socket is shut down so that the peer sees it at once and every
// goroutine inside a syscall on it returns, queued sends fail, and then
// the fd is released and the handler told. It must be called without
// the write side owned; handler methods (the read side owned) may call
// Close.
func (c *Conn) fail(op string, err error) {
	e := &ConnError{Op: op, ID: c.id, Err: err}
	if !c.failed.CompareAndSwap(nil, e) {
		return
	}
	if f, ok := c.h.(Failer); ok && op != "writev" {
		f.Failing(c, e) // its last word (LastWord), ahead of the end; not on a stream that cannot be written
	}
	c.s.Shutdown()
	c.loop.p.del(c.fd)
	c.loop.forget(c.fd)
	c.failQueued(e)
	c.releasable.Store(true)
	c.releaseIfDue()
}

// releaseIfDue closes a failed connection's fd, returns the pooled read
// buffer and calls Handler.Closed, once. It needs the read side: if another
// goroutine owns it, that goroutine does it as it leaves Progress,
// however its drain ended. fail stores releasable before it tries the
// side, and a reader releases the side before it loads releasable, so
// that one of the two always sees the other.
func (c *Conn) releaseIfDue() {
	if !c.releasable.Load() || !c.rd.own.Acquire() {
		return
	}
	if c.closed {
		c.rd.own.Release()
		return
	}
	c.wr.own.Lock() // writers never wait for the read side, so this cannot deadlock
	c.closed = true
	c.closeFD()
	if c.rd.bb != nil {
		PutBuffer(c.rd.bb)
		c.rd.bb = nil
	}
	c.rd.dst = nil
	c.wr.own.Release() // closed: nothing left to write
	c.rd.own.Release()
	c.h.Closed(c, c.failed.Load())
}

// closeFD closes the Stream: nothing reads or writes it after.
func (c *Conn) closeFD() { c.s.Close() }

// DeferLimit returns the longest payload a handler should leave unread on
// c (Defer) while the writer may still be writing it: its Stream's
// DeferLimit, if it has one (a pipe's ring must hold the rest of the
// frame), else no bound (a socket's buffers are the kernel's).
func (c *Conn) DeferLimit() uint64 {
	if c.limiter == nil {
		return math.MaxUint64
	}
	return c.limiter.DeferLimit()
}

// KeepHot makes the loop keep reading this connection, without parking,
// for Options.Spin from now: handlers call it after serving a request
// whose latency matters (a one-sided get, which only the loop serves while
// the target's own goroutines sleep), since the next is likely soon.
func (c *Conn) KeepHot() { c.loop.keepHot(c) }

// BytesWritten returns the bytes written to the socket so far.
func (c *Conn) BytesWritten() uint64 { return c.wr.total.Load() }

// Queued returns the number of frames waiting to be written.
func (c *Conn) Queued() int { return int(c.wr.nqueued.Load()) }

// LastWord writes one frame, h and payload, on c as it fails, from
// Failer.Failing: a frame the peer reads ahead of the end. It writes only
// if nobody writes c now and nothing is queued or held ahead of it, with
// one writev; it never waits, never queues, and never fails c again. It
// reports whether the frame went out whole (into the kernel, or whole
// into a Buffering stream, which may lose it as c is shut down).
func (c *Conn) LastWord(h *frame.Header, payload []byte) bool {
	w := &c.wr
	if !w.own.Acquire() {
		return false
	}
	defer w.own.Release() // c has failed: what was asked meanwhile is not served
	if w.nqueued.Load() != 0 || c.closed || c.holder != nil && c.holder.Buffered() {
		return false
	}
	h.Length = uint64(len(payload))
	h.Encode(&w.hdr)
	w.bufs = append(w.bufs[:0], w.hdr[:])
	if len(payload) > 0 {
		w.bufs = append(w.bufs, payload)
	}
	n, err := c.writev()
	return err == nil && n == frame.HeaderSize+len(payload)
}

// Abort ends the connection like Close, with err as the cause that
// pending sends and the handler see (wrapped in a *ConnError): a caller
// that judged the peer dead says why.
func (c *Conn) Abort(err error) {
	c.fail("abort", err)
}
