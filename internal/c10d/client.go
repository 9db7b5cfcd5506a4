package c10d

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Client is a connection to a TCPStore. Its methods may be called from
// several goroutines; they run one at a time. Close may be called at any
// time, and ends an operation in progress.
type Client struct {
	addr   string
	o      Options
	proto  Protocol
	conn   net.Conn
	closed atomic.Bool

	mu     sync.Mutex // held for a whole operation; guards what follows
	br     *bufio.Reader
	req    request
	broken error // the failure that left the stream at an unknown point
}

// Dial connects to the store at addr ("host:port") and, unless
// o.Protocol names one, detects its protocol. A refused connection is
// retried, as torch's client does, until ctx ends (o.Timeout if ctx has
// no deadline), which bounds the whole dial.
func Dial(ctx context.Context, addr string, o Options) (*Client, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline(ctx, o.Timeout))
	defer cancel()
	conn, br, p, err := dialProtocol(ctx, addr, o)
	if err != nil {
		return nil, &OpError{Op: "dial", Addr: addr, Err: err}
	}
	return newClient(addr, conn, br, p, o), nil
}

// newClient wraps a connection on which protocol p is already set up.
func newClient(addr string, conn net.Conn, br *bufio.Reader, p Protocol, o Options) *Client {
	return &Client{addr: addr, o: o, proto: p, conn: conn, br: br, req: request{max: o.MaxValue}}
}

// Protocol returns the protocol the store speaks.
func (c *Client) Protocol() Protocol { return c.proto }

// LocalAddr returns this end of the connection to the store: the address
// the store's host reaches this one at.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Close closes the connection; an operation in progress fails with
// ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}

// Set sets key to value. The store does not answer a SET: a failure shows
// as an error of a later operation.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	return c.do(ctx, "set", key, func() error {
		c.req.start(c.proto, qSet)
		c.req.str([]byte(key))
		c.req.str(value)
		return c.send()
	})
}

// Get waits until key is set, then returns its value. The value is the
// caller's.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := c.do(ctx, "get", key, func() error {
		if err := c.wait([]string{key}); err != nil {
			return err
		}
		c.req.start(c.proto, qGet)
		c.req.str([]byte(key))
		if err := c.send(); err != nil {
			return err
		}
		var err error
		v, err = readSized(c.br, c.o.MaxValue)
		return err
	})
	return v, err
}

// Wait waits until every key is set.
func (c *Client) Wait(ctx context.Context, keys ...string) error {
	return c.do(ctx, "wait", first(keys), func() error { return c.wait(keys) })
}

func (c *Client) wait(keys []string) error {
	c.req.start(c.proto, qWait)
	c.req.keys(keys)
	if err := c.send(); err != nil {
		return err
	}
	b, err := readByte(c.br)
	if err == nil && b != waitStop {
		err = fmt.Errorf("%w: WAIT answered %d, want STOP_WAITING (0)", ErrProtocol, b)
	}
	return err
}

// Check reports whether every key is set, without waiting.
func (c *Client) Check(ctx context.Context, keys ...string) (bool, error) {
	var ready bool
	err := c.do(ctx, "check", first(keys), func() error {
		c.req.start(c.proto, qCheck)
		c.req.keys(keys)
		if err := c.send(); err != nil {
			return err
		}
		b, err := readByte(c.br)
		switch {
		case err != nil:
			return err
		case b != checkReady && b != checkNotReady:
			return fmt.Errorf("%w: CHECK answered %d, want 0 or 1", ErrProtocol, b)
		}
		ready = b == checkReady
		return nil
	})
	return ready, err
}

// Add adds delta to the integer at key (0 if unset) and returns the sum.
func (c *Client) Add(ctx context.Context, key string, delta int64) (int64, error) {
	var sum int64
	err := c.do(ctx, "add", key, func() error {
		c.req.start(c.proto, qAdd)
		c.req.str([]byte(key))
		c.req.uint64(uint64(delta))
		if err := c.send(); err != nil {
			return err
		}
		var err error
		sum, err = readInt64(c.br)
		return err
	})
	return sum, err
}

// Delete deletes key and reports whether it was there.
func (c *Client) Delete(ctx context.Context, key string) (bool, error) {
	var n int64
	err := c.do(ctx, "delete", key, func() error {
		c.req.start(c.proto, qDelete)
		c.req.str([]byte(key))
		if err := c.send(); err != nil {
			return err
		}
		var err error
		if n, err = readInt64(c.br); err == nil && n != 0 && n != 1 {
			err = fmt.Errorf("%w: DELETE_KEY answered %d, want 0 or 1", ErrProtocol, n)
		}
		return err
	})
	return n == 1, err
}

// NumKeys returns the number of keys in the store.
func (c *Client) NumKeys(ctx context.Context) (int64, error) {
	var n int64
	err := c.do(ctx, "numkeys", "", func() error {
		c.req.start(c.proto, qNumKeys)
		if err := c.send(); err != nil {
			return err
		}
		var err error
		if n, err = readInt64(c.br); err == nil && n < 0 {
			err = fmt.Errorf("%w: GETNUMKEYS answered %d", ErrProtocol, n)
		}
		return err
	})
	return n, err
}

// send writes the request built in c.req.
func (c *Client) send() error {
	if c.req.err != nil {
		return fmt.Errorf("%w (%w)", c.req.err, errNotSent)
	}
	_, err := c.conn.Write(c.req.b)
	return err
}

// do runs one operation under the lock, with the deadline of ctx (or
// o.Timeout), and ends it early if ctx is canceled. A failure after
// anything was written breaks the client.
func (c *Client) do(ctx context.Context, op, key string, fn func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.run(ctx, fn)
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Key: key, Addr: c.addr, Err: err}
}

func (c *Client) run(ctx context.Context, fn func() error) error {
	switch {
	case c.closed.Load():
		return ErrClosed
	case c.broken != nil:
		return fmt.Errorf("%w: %w", ErrBroken, c.broken)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if err := c.conn.SetDeadline(deadline(ctx, c.o.Timeout)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	err := fn()
	stop()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotSent):
		return err
	case c.closed.Load():
		err = fmt.Errorf("%w (%w)", ErrClosed, err)
	case ctxDone(ctx) != nil:
		err = fmt.Errorf("%w (%w)", ctxDone(ctx), err)
	}
	c.broken = err
	return err
}

// ctxDone is ctx.Err(), or context.DeadlineExceeded once ctx's deadline
// is past: the connection's deadline, set to it, may fire a moment before
// ctx's own timer.
func ctxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// deadline is ctx's deadline, or timeout from now.
func deadline(ctx context.Context, timeout time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(timeout)
}

func first(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}
