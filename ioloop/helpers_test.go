package ioloop_test

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// rawFd is a socket the test reads and writes itself (blocking).
type rawFd struct {
	fd   int
	once sync.Once
}

func (r *rawFd) close() { r.once.Do(func() { unix.Close(r.fd) }) }

// write writes all of b.
func (r *rawFd) write(t testing.TB, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n, err := unix.Write(r.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Errorf("write: %v", err)
			return
		}
		b = b[n:]
	}
}

// readFull reads exactly len(b) bytes in reads of at most chunk bytes.
func (r *rawFd) readFull(b []byte, chunk int) error {
	for len(b) > 0 {
		n, err := unix.Read(r.fd, b[:min(chunk, len(b))])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("unexpected EOF with %d bytes missing", len(b))
		}
		b = b[n:]
	}
	return nil
}

// readFrame reads one frame from the raw socket.
func (r *rawFd) readFrame(chunk int) (frame.Header, []byte, error) {
	var hb [frame.HeaderSize]byte
	if err := r.readFull(hb[:], chunk); err != nil {
		return frame.Header{}, nil, err
	}
	h, err := frame.Decode(hb[:], 0)
	if err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Length)
	return h, p, r.readFull(p, chunk)
}

// socketPair returns two connected stream sockets of the given family
// (unix.AF_UNIX or unix.AF_INET for loopback TCP). Neither is closed by the
// helper: one handed to Register belongs to the loop.
func socketPair(t testing.TB, family int) (int, int) {
	t.Helper()
	if family == unix.AF_UNIX {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fds[0], fds[1]
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		t.Fatal(err)
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(c, sa); err != nil {
		unix.Close(c)
		t.Fatal(err)
	}
	a, _, err := unix.Accept(ln)
	if err != nil {
		unix.Close(c)
		t.Fatal(err)
	}
	for _, fd := range []int{a, c} {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	return a, c
}

// rawPeer returns a Conn registered on l with handler h and the raw socket
// at its other end, closed when the test ends.
func rawPeer(t testing.TB, l *ioloop.Loop, family, id int, h ioloop.Handler) (*ioloop.Conn, *rawFd) {
	t.Helper()
	if family == familyPipe {
		t.Skip("a pipe has no raw socket to write frames into")
	}
	a, b := socketPair(t, family)
	raw := &rawFd{fd: b}
	t.Cleanup(raw.close)
	c, err := l.Register(a, id, h)
	if err != nil {
		raw.close()
		t.Fatal(err)
	}
	return c, raw
}

// connPair registers both ends of a socket pair on l.
func connPair(t testing.TB, l *ioloop.Loop, family int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	return connPairBuf(t, l, family, 0, ha, hb)
}

// connPairBuf is connPair with the socket buffers of both ends set to
// bufSize bytes (which turns TCP's autotuning off), unless it is 0.
func connPairBuf(t testing.TB, l *ioloop.Loop, family, bufSize int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	if family == familyPipe {
		ring := 64 << 10
		if bufSize > 0 {
			ring = 1 << bits.Len(uint(bufSize-1))
		}
		return looptest.PipePair(t, l, ring, ha, hb)
	}
	a, b := socketPair(t, family)
	if bufSize > 0 {
		for _, fd := range []int{a, b} {
			for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
				if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, bufSize); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ca, err := l.Register(a, 1, ha)
	if err != nil {
		unix.Close(b)
		t.Fatal(err)
	}
	cb, err := l.Register(b, 2, hb)
	if err != nil {
		t.Fatal(err)
	}
	return ca, cb
}

func familyName(f int) string {
	switch f {
	case unix.AF_UNIX:
		return "unix"
	case familyPipe:
		return "pipe"
	}
	return "tcp"
}

var families = []int{unix.AF_UNIX, unix.AF_INET, familyPipe}

// familyPipe stands for a pipe in shared memory (internal/link/shm) where a
// test takes a socket family: connPair makes one; rawPeer skips, since a
// pipe has no raw socket to write frames into.
const familyPipe = -1

// writevLog records the writevs of the hook, per connection id.
type writevLog struct {
	mu    sync.Mutex
	calls []writevCall
}

type writevCall struct{ id, bufs, n int }

// installWritevLog sets the writev hook for the duration of the test. Call
// it before starting the loop; its cleanup must run after the loop closed,
// so call it before newLoop.
func installWritevLog(t testing.TB) *writevLog {
	w := &writevLog{}
	ioloop.SetTestHookWritev(func(id, bufs, n int) {
		w.mu.Lock()
		w.calls = append(w.calls, writevCall{id, bufs, n})
		w.mu.Unlock()
	})
	t.Cleanup(func() { ioloop.SetTestHookWritev(nil) })
	return w
}

// of returns the writevs of connection id recorded so far.
func (w *writevLog) of(id int) []writevCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var cs []writevCall
	for _, c := range w.calls {
		if c.id == id {
			cs = append(cs, c)
		}
	}
	return cs
}

func (w *writevLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sb strings.Builder
	for _, c := range w.calls {
		fmt.Fprintf(&sb, "[id %d bufs %d n %d] ", c.id, c.bufs, c.n)
	}
	return sb.String()
}
