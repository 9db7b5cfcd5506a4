package sealed_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/link/tcp"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

var ciphers = []sealed.Cipher{sealed.AES256GCM, sealed.ChaCha20Poly1305}

// crews are the crew sizes the tests run with: the caller alone, and four
// goroutines (which this machine may not have, but the batches split all
// the same).
var crews = []int{1, 4}

// crew is the Options.Crew of the streams the helpers make, set by
// withCrews.
var crew = 1

// opts are the Options of a stream the helpers make.
func opts(lim sealed.Limits) sealed.Options { return sealed.Options{Limits: lim, Crew: crew} }

// withCrews runs f as a subtest per crew size.
func withCrews(t *testing.T, f func(t *testing.T)) {
	for _, n := range crews {
		t.Run(fmt.Sprintf("crew=%d", n), func(t *testing.T) {
			crew = n
			defer func() { crew = 1 }()
			sealed.HireCrew(n)
			was := sealed.CrewJobs()
			f(t)
			if did := sealed.CrewJobs() - was; n == 1 && did != 0 || n > 1 && did == 0 {
				t.Errorf("the crew sealed or opened %d records, want %s", did, map[bool]string{true: "none", false: "some"}[n == 1])
			}
		})
	}
}

// testKey and the HELLOs below make fixed keys, for tests and fuzzing.
var testKey = []byte("a mesh key of thirty-two bytes!!")

func hello(fill byte) []byte { return bytes.Repeat([]byte{fill}, 112) }

// keys returns both ends' keys of a link sealed with c.
func keys(t testing.TB, c sealed.Cipher) (dialer, acceptor sealed.Keys) {
	t.Helper()
	d, a, err := sealed.Derive(c, testKey, hello(1), hello(2))
	if err != nil {
		t.Fatal(err)
	}
	return d, a
}

// socketPair returns a connected pair of non-blocking unix stream
// sockets as Streams, closed when the test ends unless a Stream over
// them was.
func socketPair(t testing.TB) (a, b ioloop.Stream) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a, err = ioloop.SocketStream(fds[0]); err != nil {
		t.Fatal(err)
	}
	if b, err = ioloop.SocketStream(fds[1]); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// tcpPair returns both ends of a loopback TCP connection as Streams,
// with buffers of buf bytes.
func tcpPair(t testing.TB, buf int) (a, b ioloop.Stream) {
	t.Helper()
	dialed, accepted := looptest.TCPPair(t)
	var s [2]ioloop.Stream
	for i, tc := range []*net.TCPConn{dialed, accepted} {
		tc.SetReadBuffer(buf)
		tc.SetWriteBuffer(buf)
		var err error
		if s[i], err = tcp.Stream(tc); err != nil {
			t.Fatal(err)
		}
		tc.Close() // the Stream holds its own descriptor
	}
	return s[0], s[1]
}

// pair returns the sealed ends of a socket pair, dialer first.
func pair(t testing.TB, c sealed.Cipher, lim sealed.Limits) (*sealed.Stream, *sealed.Stream) {
	t.Helper()
	ra, rb := socketPair(t)
	return seal(t, c, lim, ra, rb)
}

// seal seals the ends ra, the dialer, and rb of a connection.
func seal(t testing.TB, c sealed.Cipher, lim sealed.Limits, ra, rb ioloop.Stream) (*sealed.Stream, *sealed.Stream) {
	t.Helper()
	kd, ka := keys(t, c)
	a, err := sealed.New(ra, kd, opts(lim))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sealed.New(rb, ka, opts(lim))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// waitFd waits until fd is readable (in) or writable.
func waitFd(t testing.TB, fd int, in bool) {
	ev := int16(unix.POLLOUT)
	if in {
		ev = unix.POLLIN
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: ev}}
	if _, err := unix.Poll(fds, int(10*time.Second/time.Millisecond)); err != nil && err != unix.EINTR {
		t.Error(err)
	}
}

// writeAll writes every byte of bufs through s, as a Conn would: Writev
// until all is taken, then Flush until nothing waits. It reports an
// error on t (from another goroutine too).
func writeAll(t testing.TB, s ioloop.Stream, bufs [][]byte) {
	bufs = append([][]byte(nil), bufs...)
	for len(bufs) > 0 {
		n, err := s.Writev(bufs)
		if err == unix.EAGAIN {
			waitFd(t, s.Fd(), false)
			continue
		}
		if err != nil {
			t.Errorf("Writev: %v", err)
			return
		}
		for n > 0 {
			c := min(n, len(bufs[0]))
			bufs[0], n = bufs[0][c:], n-c
			if len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	flush(t, s)
}

// flush writes what s holds.
func flush(t testing.TB, s ioloop.Stream) {
	b, ok := s.(ioloop.Buffering)
	for ok && b.Buffered() {
		if err := b.Flush(); err != nil {
			t.Errorf("Flush: %v", err)
			return
		}
		if b.Buffered() {
			waitFd(t, s.Fd(), false)
		}
	}
}

// readAll reads from s with reads of the sizes in chunk, in turn, until
// it ends: what it read, and the error that ended it.
func readAll(t testing.TB, s ioloop.Stream, chunk []int) ([]byte, error) {
	var got []byte
	buf := make([]byte, slices.Max(chunk))
	for i := 0; ; i++ {
		n, err := s.Read(buf[:chunk[i%len(chunk)]], true)
		n = max(n, 0) // a socket's read(2) says -1
		got = append(got, buf[:n]...)
		switch {
		case err == unix.EAGAIN:
			waitFd(t, s.Fd(), true)
		case err != nil:
			return got, err
		case n == 0: // a socket's end
			return got, ioloop.ErrEOF
		}
	}
}

// record is one record of a sealed byte stream.
type record []byte

// records splits a sealed byte stream into its records (a partial last
// one included).
func records(b []byte) []record {
	var out []record
	for len(b) > 0 {
		n := sealed.HeaderSize + sealed.TagSize
		if len(b) >= sealed.HeaderSize {
			n += int(binary.LittleEndian.Uint32(b))
		}
		n = min(n, len(b))
		out = append(out, record(b[:n]))
		b = b[n:]
	}
	return out
}

// rawStream reads whatever raw, the other end of a sealed stream's
// socket, receives until it ends.
func rawStream(t testing.TB, raw ioloop.Stream) []byte {
	got, err := readAll(t, raw, []int{1 << 20})
	if !errors.Is(err, ioloop.ErrEOF) {
		t.Fatalf("raw read: %v", err)
	}
	return got
}
