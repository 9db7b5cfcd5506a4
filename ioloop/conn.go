package ioloop

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Conn is one connection owned by a Loop. Send, Progress, Pause, Resume and
// Close are safe for concurrent use.
type Conn struct {
	loop *Loop
	fd   int
	id   int
	h    Handler

	failOnce sync.Once
	failed   atomic.Pointer[ConnError]
	closed   bool // fd closed; guarded by rd.mu and wr.mu both held

	rd reader
	wr writer
}

func newConn(l *Loop, fd, id int, h Handler) *Conn {
	c := &Conn{loop: l, fd: fd, id: id, h: h}
	c.rd.buf = make([]byte, l.opts.StagingSize)
	c.wr.iov = make([]unix.Iovec, 0, maxIovecs)
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
func (c *Conn) Close() error {
	c.fail("close", ErrClosed)
	return nil
}

// fail ends the connection once: the socket is shut down so that the peer
// sees it at once, queued sends fail, the handler is told, and the fd is
// closed as soon as no goroutine is using it. It must be called with
// neither rd.mu nor wr.mu held.
func (c *Conn) fail(op string, err error) {
	c.failOnce.Do(func() {
		e := &ConnError{Op: op, ID: c.id, Err: err}
		c.failed.Store(e)
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
		c.loop.p.del(c.fd)
		c.loop.forget(c.fd)
		c.failQueued(e)
		c.release()
		c.h.Closed(c, e)
	})
}

// release closes the fd and returns the pooled read buffer, with both sides
// locked so that nobody is inside a syscall on the fd.
func (c *Conn) release() {
	c.rd.mu.Lock()
	c.wr.mu.Lock()
	c.closed = true
	unix.Close(c.fd)
	if c.rd.bb != nil {
		PutBuffer(c.rd.bb)
		c.rd.bb = nil
	}
	c.rd.dst = nil
	c.wr.mu.Unlock()
	c.rd.mu.Unlock()
}
