// Package faulty is a link kind for tests: a Stream that wraps another
// (a socket's) and does to its bytes what a test asks, after the
// handshake, while the Conn above it runs as it would over a real link:
// it holds them (Stall, as a peer whose process stopped while its kernel
// still acknowledges; StallAfter, one that stopped partway through what
// it was sending), hands what is read over only a while after it
// came (Delay), flips one (Corrupt), leaves out what one write wrote
// (DropWrite), or ends the stream (Cut). It is written against ioloop's
// Stream seam alone.
package faulty

import (
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// Stream is an ioloop.Stream with faults on request. Its controls are
// safe for concurrent use with the Conn's reader and writer. It uses
// only the wrapped Stream's basic methods: wrap a socket's, not a
// stream whose capabilities (Poller, Belled) the Conn needs.
//
// Lock rule: mu guards every field but in and conn (set once, by
// Attach); the Conn's reader and writer take it for each call, never
// while calling the Conn.
type Stream struct {
	in   ioloop.Stream
	conn *ioloop.Conn

	mu      sync.Mutex
	stalled bool
	stallAt int64 // the offset of the read stream at which it stalls (StallAfter); -1: none
	delay   time.Duration
	flip    int64 // the offset of the read stream whose byte Corrupt flips; -1: none
	read    int64 // bytes handed to the Conn so far
	held    []chunk
	drop    bool        // DropWrite: the next Writev's bytes are left out
	dropped int64       // bytes left out so far
	heldErr error       // what the wrapped Read returned after the held bytes
	timer   *time.Timer // looks again once the first held chunk is due
}

// chunk is bytes read from the wrapped stream, not yet handed over
// (Delay).
type chunk struct {
	b   []byte
	due time.Time
}

var (
	_ ioloop.Stream   = (*Stream)(nil)
	_ ioloop.Attacher = (*Stream)(nil)
)

// Wrap returns in with no fault yet; it owns in from now on.
func Wrap(in ioloop.Stream) *Stream { return &Stream{in: in, flip: -1, stallAt: -1} }

// Attach implements ioloop.Attacher.
func (s *Stream) Attach(c *ioloop.Conn) {
	s.conn = c
	if a, ok := s.in.(ioloop.Attacher); ok {
		a.Attach(c)
	}
}

// Fd implements ioloop.Stream.
func (s *Stream) Fd() int { return s.in.Fd() }

// Shutdown implements ioloop.Stream.
func (s *Stream) Shutdown() { s.in.Shutdown() }

// Close implements ioloop.Stream.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	return s.in.Close()
}

// Stall holds (on) every byte in both directions, as a peer whose
// process stopped holds them: reads find nothing and writes no room,
// while the wrapped stream stays open; or lets them go again (off).
func (s *Stream) Stall(on bool) {
	s.mu.Lock()
	s.stalled, s.stallAt = on, -1
	s.mu.Unlock()
	if !on && s.conn != nil {
		// What came, and what waits to be written, meanwhile raised no
		// readiness the poller still reports.
		s.conn.Look()
		s.conn.Flush()
	}
}

// StallAfter hands the next n bytes read over and then stalls, as Stall(true)
// does: a peer that stopped partway through what it was sending. Stall
// lets the bytes go again.
func (s *Stream) StallAfter(n int64) {
	s.mu.Lock()
	s.stallAt = s.read + n
	s.mu.Unlock()
}

// Stalled reports whether the stream holds its bytes now: Stall(true), or
// StallAfter's bytes handed over and the Conn has read again.
func (s *Stream) Stalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// Delay hands each byte read over only d after it was read from the
// wrapped stream (0: at once, from now on, after those held).
func (s *Stream) Delay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// Corrupt flips the bits of the byte of the read stream after bytes
// from now: 0 is the next byte the Conn reads.
func (s *Stream) Corrupt(after int64) {
	s.mu.Lock()
	s.flip = s.read + after
	s.mu.Unlock()
}

// DropWrite leaves out the bytes of the next Writev that has any to
// write: it reports them written and writes none, as a relay on the path
// that dropped what passed in one go. Under a sealed Stream, whose
// Writev hands its records over whole, that is whole records, provided
// the write before went out whole (an idle stream's).
func (s *Stream) DropWrite() {
	s.mu.Lock()
	s.drop = true
	s.mu.Unlock()
}

// Dropped returns how many bytes DropWrite left out so far.
func (s *Stream) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Cut ends the wrapped stream in both directions, as a link that broke.
func (s *Stream) Cut() { s.in.Shutdown() }

// Read implements ioloop.Stream.
func (s *Stream) Read(p []byte, arm bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stallAt >= 0 {
		left := s.stallAt - s.read
		if left <= 0 {
			s.stalled, s.stallAt = true, -1
		} else if int64(len(p)) > left {
			p = p[:left]
		}
	}
	if s.stalled {
		return 0, unix.EAGAIN
	}
	var n int
	var err error
	if s.delay > 0 || len(s.held) > 0 {
		n, err = s.readHeld(p, arm)
	} else {
		n, err = s.in.Read(p, arm)
	}
	if n > 0 && s.flip >= s.read && s.flip < s.read+int64(n) {
		p[s.flip-s.read] ^= 0xff
		s.flip = -1
	}
	if n > 0 {
		s.read += int64(n)
	}
	return n, err
}

// readHeld reads what the wrapped stream has into held chunks and hands
// over what is due, or unix.EAGAIN with a timer set for the first that
// is not. mu is held.
func (s *Stream) readHeld(p []byte, arm bool) (int, error) {
	for s.heldErr == nil {
		b := make([]byte, 64<<10)
		n, err := s.in.Read(b, arm)
		if n > 0 {
			s.held = append(s.held, chunk{b: b[:n], due: time.Now().Add(s.delay)})
		} else if err == nil {
			err = ioloop.ErrEOF // read(2)'s end of the stream
		}
		if err != nil {
			if err != unix.EAGAIN && err != unix.EINTR {
				s.heldErr = err
			}
			break
		}
	}
	if len(s.held) == 0 {
		err := s.heldErr
		s.heldErr = nil
		if err == nil {
			err = unix.EAGAIN
		}
		return 0, err
	}
	first := &s.held[0]
	if wait := time.Until(first.due); wait > 0 {
		s.lookIn(wait)
		return 0, unix.EAGAIN
	}
	n := copy(p, first.b)
	if first.b = first.b[n:]; len(first.b) == 0 {
		s.held = s.held[1:]
	}
	return n, nil
}

// lookIn has the Conn read again after d. mu is held.
func (s *Stream) lookIn(d time.Duration) {
	if s.timer == nil {
		s.timer = time.AfterFunc(d, func() { s.conn.Look() })
		return
	}
	s.timer.Reset(d)
}

// Writev implements ioloop.Stream.
func (s *Stream) Writev(bufs [][]byte) (int, error) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	s.mu.Lock()
	stalled, drop := s.stalled, s.drop && n > 0
	if drop && !stalled {
		s.drop = false
		s.dropped += int64(n)
	}
	s.mu.Unlock()
	switch {
	case stalled:
		return 0, unix.EAGAIN
	case drop:
		return n, nil
	}
	return s.in.Writev(bufs)
}
