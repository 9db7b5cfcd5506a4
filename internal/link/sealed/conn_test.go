package sealed_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// connPair registers both sealed ends of a socket pair whose buffers
// hold buf bytes with l, so that records wait in the Stream (Buffering)
// whenever the socket is full.
func connPair(t *testing.T, l *ioloop.Loop, buf int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	a, b := pair(t, sealed.AES256GCM, sealed.Limits{Records: 50})
	var conns [2]*ioloop.Conn
	for i, s := range []*sealed.Stream{a, b} {
		for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
			if err := unix.SetsockoptInt(s.Fd(), unix.SOL_SOCKET, opt, buf); err != nil {
				t.Fatal(err)
			}
		}
		c, err := l.RegisterStream(s, i+1, []ioloop.Handler{ha, hb}[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// TestConns runs frames of awkward sizes both ways at once through Conns
// over sealed streams on sockets too small for a record, so that the
// Conns' writers finish what the streams hold (ioloop.Buffering), with
// every byte checked.
func TestConns(t *testing.T) { withCrews(t, testConns) }

func testConns(t *testing.T) {
	sizes := []int{0, 1, 31, 32, 4095, 65536, 65537, 1 << 20, 3 << 20}
	for _, buf := range []int{4096, 1 << 20} {
		t.Run(fmt.Sprintf("sockbuf=%d", buf), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			ha, hb := looptest.NewHandler(), looptest.NewHandler()
			hb.Named = looptest.NamedAll
			ca, cb := connPair(t, l, buf, ha, hb)
			done := make(chan error, 2)
			for k, c := range []*ioloop.Conn{ca, cb} {
				go func() {
					for i, n := range sizes {
						h := frame.Header{Kind: frame.KindPut, Src: uint32(k), Tag: uint32(i), Offset: uint64(i) << 40}
						if err := c.Send(&h, looptest.Patterned(uint64(k<<8|i), n)); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
			}
			for range 2 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			for k, h := range []*looptest.Handler{hb, ha} {
				got := h.WaitFrames(t, len(sizes))
				for i, n := range sizes {
					want := frame.Header{Kind: frame.KindPut, Src: uint32(k), Tag: uint32(i), Offset: uint64(i) << 40}
					looptest.AssertFrame(t, got[i], want, looptest.Patterned(uint64(k<<8|i), n), h == hb)
				}
				h.Check(t)
			}
		})
	}
}

// TestHeldRecordsWritten: the records a sealed stream holds when the
// Conn has nothing more queued still go out, as the socket frees room,
// though nobody sends again. The frame fits one Writev, which seals it
// whole, so Send returns while most of it waits in the stream.
func TestHeldRecordsWritten(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	ra, rb := tcpPair(t, 16<<10)
	a, b := seal(t, sealed.ChaCha20Poly1305, sealed.Limits{}, ra, rb)
	ca, err := l.RegisterStream(a, 1, looptest.NopHandler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := looptest.Patterned(5, 200000)
	h := frame.Header{Kind: frame.KindSend, Tag: 9}
	if err := ca.Send(&h, payload); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the socket stays full meanwhile
	want := looptest.EncodeFrame(h, payload)
	if got := readUntil(t, b, nil, len(want), nil); !bytes.Equal(got, want) {
		t.Fatalf("read %d of the frame's %d bytes", len(got), len(want))
	}
}

// readUntil reads from s onto got until it holds n bytes, done is ready
// (then it receives from it: a Send's error) or looptest.WaitTimeout
// passes.
func readUntil(t *testing.T, s *sealed.Stream, got []byte, n int, done <-chan error) []byte {
	buf := make([]byte, 4096)
	deadline := time.Now().Add(looptest.WaitTimeout)
	for len(got) < n && time.Now().Before(deadline) {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return got
		default:
		}
		k, err := s.Read(buf, true)
		if err == unix.EAGAIN {
			fds := []unix.PollFd{{Fd: int32(s.Fd()), Events: unix.POLLIN}}
			unix.Poll(fds, 1)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:k]...)
	}
	return got
}
