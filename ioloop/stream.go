package ioloop

import (
	"os"

	"golang.org/x/sys/unix"
)

// Stream is the medium under a Conn, the one place a kind of link plugs
// in: a byte stream that the Conn reads frames from and writes frames to
// without blocking, and the descriptor the loop's poller watches for it.
// A connected socket is one (SocketStream; Register wraps it); a link kind in a package
// of its own implements others (a pipe in shared memory,
// internal/link/shm) and hands them to RegisterStream.
//
// Ownership: a Conn has one reader at a time (whoever holds its read
// side: the loop, or a goroutine in Progress or Poll), the only caller of
// Read, and one writer at a time (whoever holds its write side), the only
// caller of Writev; the reader and the writer may call at once. Shutdown
// may be called at any time, once; Close once, after Shutdown, when
// neither side will call again. The Conn owns the Stream from its
// registration: it closes it when the Conn ends, also when the
// registration itself fails.
//
// Optional capabilities, each asked once as the Stream is registered:
// Attacher (the Stream needs its Conn), Belled (its descriptor is a bell,
// not its bytes), Poller (it announces arrivals only on request),
// DeferLimiter (it bounds what a handler may leave unread) and Buffering
// (it may hold bytes it took until the descriptor has room).
type Stream interface {
	// Fd returns the descriptor the loop polls for the stream, in
	// non-blocking mode: readable when Read may find bytes, writable when
	// Writev may find room.
	Fd() int
	// Read reads up to len(p) bytes into p: n > 0; or (0, unix.EAGAIN)
	// when there are none, and the descriptor turns readable when some
	// come; or (0, ErrEOF) when the other end closed and everything it
	// sent was read; or an error that ends the Conn. arm is set on the
	// drains that must end only when nothing is left (not Poll's): a
	// stream that reports arrivals only on request (Poller) asks before it
	// returns EAGAIN then.
	Read(p []byte, arm bool) (int, error)
	// Writev writes the bytes of bufs, in order, as far as they fit
	// without blocking: n > 0; or (0, unix.EAGAIN) when none fit, and the
	// descriptor turns writable once room frees; or an error that ends
	// the Conn (os.NewSyscallError wraps it). It keeps no reference to
	// bufs.
	Writev(bufs [][]byte) (int, error)
	// Shutdown ends the stream in both directions at once: the other end
	// sees its end, and a Read or Writev under way returns.
	Shutdown()
	// Close releases the descriptor and whatever else the stream holds;
	// nothing touches the stream after it.
	Close() error
}

// Attacher is a Stream that needs its Conn (to have it read when the
// stream learns of bytes on its own, OnReadable): RegisterStream calls
// Attach before any other method of the Stream, and before the loop may
// call the Conn's handler.
type Attacher interface {
	Attach(c *Conn)
}

// Belled is a Stream whose descriptor only says "look again" (a pipe's
// bell): when the poller reports it, the loop calls Rang, which drains
// it, and then drives both directions of the Conn. An error from Rang
// ends the Conn.
type Belled interface {
	Rang() error
}

// Poller is a Stream that reports arrivals only on request (Read with
// arm), such as a pipe whose writer rings a bell only for a reader that
// asked: a goroutine that polls its Conn in a loop says so (Conn.Polling,
// Conn.Polled), so that the stream asks for no wake-up while somebody
// looks anyway. (Sockets report every arrival, and need none of this.)
type Poller interface {
	// Pollers returns how many goroutines poll the Conn in a loop now.
	Pollers() uint32
	// StartPolling counts a goroutine in (Conn.Polling(true)).
	StartPolling()
	// StopPolling counts it out (Conn.Polling(false)); the last one out
	// asks for a wake-up, and drain reports that bytes came before it
	// asked, which the Conn then reads.
	StopPolling() (drain bool)
	// StopPolled counts it out, for a goroutine that got what it polled
	// for and likely polls again soon (Conn.Polled): the stream may put
	// off asking for a wake-up.
	StopPolled()
	// Writing counts a sender in (on) or out of retrying its write itself
	// (Conn's write spin), so that the stream asks for no wake-up when
	// room frees meanwhile; last reports that the one counted out was the
	// last, which then writes once more. While it retries, the sender also
	// reads the Conn: the other end may be waiting for room too.
	Writing(on bool) (last bool)
}

// DeferLimiter is a Stream that bounds what a handler may leave unread
// (Conn.DeferLimit): its writer must be able to finish a frame without
// its reader reading.
type DeferLimiter interface {
	DeferLimit() uint64
}

// Buffering is a Stream whose Writev may take bytes it could not yet
// hand to its descriptor (a sealed link's records, sealed at once): it
// holds them, and writes them before anything later. The Conn counts
// such bytes as written, and, while Buffered reports any, keeps asking
// for room and calls Flush once its queue is empty. Both are called by
// the Conn's writer only.
type Buffering interface {
	// Buffered reports whether bytes taken by Writev wait to be written.
	Buffered() bool
	// Flush writes what waits, as far as it fits without blocking: nil,
	// also when some still waits (the descriptor turns writable once
	// room frees), or an error that ends the Conn.
	Flush() error
}

// socketStream is a connected socket as a Stream. Lock rule: iov belongs
// to the Conn's writer.
type socketStream struct {
	fd  int
	iov []unix.Iovec // Writev's vector, reused
}

var _ Stream = (*socketStream)(nil)

// SocketStream returns fd, a connected stream socket, as a Stream, in
// non-blocking mode, for a caller that wraps it before RegisterStream
// (Register does both). The Stream owns fd: it is closed also when
// SocketStream fails.
func SocketStream(fd int) (Stream, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return &socketStream{fd: fd, iov: make([]unix.Iovec, 0, maxIovecs)}, nil
}

func (s *socketStream) Fd() int { return s.fd }

func (s *socketStream) Read(p []byte, _ bool) (int, error) { return unix.Read(s.fd, p) }

// Writev: writev_syscall.go, writev_libc.go.

func (s *socketStream) Shutdown() { unix.Shutdown(s.fd, unix.SHUT_RDWR) }

func (s *socketStream) Close() error { return os.NewSyscallError("close", unix.Close(s.fd)) }
