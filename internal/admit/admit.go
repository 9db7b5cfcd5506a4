// Package admit accepts the connections of a forming mesh for the
// listeners of boltmesh's tools (the CLI's rendezvous, the stdnet
// baseline): each accepted connection runs its handshake in a goroutine
// of its own, under a deadline of its own, so that a stranger who
// connects and says nothing, or sends garbage, delays nobody. A refused
// connection is closed and reported; it never ends the accept loop.
package admit

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultHandshake is Options.Handshake's default.
	DefaultHandshake = 5 * time.Second
	// DefaultMaxPending is Options.MaxPending's default.
	DefaultMaxPending = 64
)

// Options say how Serve admits connections.
type Options struct {
	// Deadline ends the accept loop. Zero: none.
	Deadline time.Time
	// Handshake bounds each connection's handshake, counted from its
	// accept (and never past Deadline). Default DefaultHandshake.
	Handshake time.Duration
	// MaxPending bounds the handshakes under way at once; a connection
	// accepted beyond it is refused at once with ErrBusy. Default
	// DefaultMaxPending.
	MaxPending int
	// OnReject, if set, is called with a *RejectError for every refused
	// connection, on Serve's goroutine.
	OnReject func(error)
}

// result is a connection whose handshake ended.
type result[T any] struct {
	c   net.Conn
	v   T
	err error
}

// server is one Serve call's state. pending holds the connections whose
// handshake is under way, under mu; results carries every ended handshake
// to Serve's goroutine until stop closes.
type server[T any] struct {
	o         Options
	handshake func(net.Conn) (T, error)
	results   chan result[T]
	stop      chan struct{}
	wg        sync.WaitGroup

	mu      sync.Mutex
	pending map[net.Conn]struct{}
}

// Serve accepts connections on ln and runs handshake on each, in a
// goroutine of its own with the connection's deadline set; each
// connection that passes goes, its deadline cleared, to admit, which runs
// on Serve's goroutine (one call at a time) and owns the connection from
// then on unless it returns an error. Serve returns nil as soon as admit
// reports done; else, when ln fails or Deadline passes, the accept error
// joined with the last refusal. A connection refused by handshake or
// admit (or for ErrBusy) is closed and passed to OnReject. Serve closes
// ln, and every connection still in its handshake, before it returns.
func Serve[T any](ln net.Listener, o Options, handshake func(net.Conn) (T, error), admit func(net.Conn, T) (done bool, err error)) error {
	s := &server[T]{o: o.withDefaults(), handshake: handshake, results: make(chan result[T]), stop: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	if dl, ok := ln.(interface{ SetDeadline(time.Time) error }); ok && !s.o.Deadline.IsZero() {
		dl.SetDeadline(s.o.Deadline)
	}
	acceptErr := make(chan error, 1)
	s.wg.Go(func() { acceptErr <- s.accept(ln) })
	defer s.shutdown(ln)
	var last error
	for {
		select {
		case r := <-s.results:
			s.untrack(r.c)
			if r.err == nil {
				done, err := admit(r.c, r.v)
				if err == nil && done {
					return nil
				}
				if err == nil {
					continue
				}
				r.err = err
			}
			r.c.Close()
			last = &RejectError{Addr: r.c.RemoteAddr(), Err: r.err}
			if s.o.OnReject != nil {
				s.o.OnReject(last)
			}
		case err := <-acceptErr:
			return errors.Join(err, last)
		}
	}
}

func (o Options) withDefaults() Options {
	if o.Handshake <= 0 {
		o.Handshake = DefaultHandshake
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	return o
}

// accept accepts until ln fails, starting each connection's handshake.
func (s *server[T]) accept(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if !s.track(c) {
			if !s.send(result[T]{c: c, err: ErrBusy}) {
				c.Close()
			}
			continue
		}
		s.wg.Go(func() { s.shake(c) })
	}
}

// shake runs one connection's handshake and hands the outcome over.
func (s *server[T]) shake(c net.Conn) {
	d := time.Now().Add(s.o.Handshake)
	if !s.o.Deadline.IsZero() && s.o.Deadline.Before(d) {
		d = s.o.Deadline
	}
	err := c.SetDeadline(d)
	var v T
	if err == nil {
		v, err = s.handshake(c)
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if !s.send(result[T]{c: c, v: v, err: err}) {
		c.Close()
	}
}

// send hands r to Serve's goroutine; false once Serve has returned.
func (s *server[T]) send(r result[T]) bool {
	select {
	case s.results <- r:
		return true
	case <-s.stop:
		return false
	}
}

// track records c as in its handshake; false when MaxPending are.
func (s *server[T]) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= s.o.MaxPending {
		return false
	}
	s.pending[c] = struct{}{}
	return true
}

func (s *server[T]) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.pending, c)
	s.mu.Unlock()
}

// shutdown stops the accept loop and every handshake under way, and waits
// for their goroutines.
func (s *server[T]) shutdown(ln net.Listener) {
	close(s.stop)
	ln.Close()
	s.mu.Lock()
	for c := range s.pending {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
