package ioloop_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestGarbage: bytes that are not a frame fail the connection with a
// *ConnError wrapping ErrProtocol and the *frame.DecodeError; later Sends
// return that error.
func TestGarbage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    ioloop.Options
		wire    []byte
		cause   error
		field   string
		prelude int // frames delivered before the garbage
	}{
		{name: "unknown kind", wire: append([]byte{0xee}, make([]byte, 31)...), cause: frame.ErrUnknownKind, field: "kind"},
		{name: "after a frame", wire: append(looptest.EncodeFrame(frame.Header{Kind: frame.KindSend, Aux: 9}, looptest.Patterned(9, 100)), 0xee, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28),
			cause: frame.ErrUnknownKind, field: "kind", prelude: 1},
		{name: "too large", opts: ioloop.Options{MaxFrame: 1000}, wire: looptest.EncodeFrame(frame.Header{Kind: frame.KindSend}, make([]byte, 1001)), cause: frame.ErrTooLarge, field: "length"},
		{name: "dst on a heartbeat", wire: func() []byte {
			b := looptest.EncodeFrame(frame.Header{Kind: frame.KindHeartbeat}, nil)
			b[2] = 1
			return b
		}(), cause: frame.ErrReserved, field: "dst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, tc.opts)
			rx := looptest.NewHandler()
			c, raw := rawPeer(t, l, unix.AF_UNIX, 42, rx)
			raw.write(t, tc.wire)
			err := rx.WaitClosed(t)
			ce := looptest.AssertConnError(t, err, ioloop.ErrProtocol)
			if ce.ID != 42 || ce.Op != "decode" {
				t.Errorf("ConnError %+v, want ID 42 and Op decode", ce)
			}
			var de *frame.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%v does not wrap a *frame.DecodeError", err)
			}
			if !errors.Is(err, tc.cause) || de.Field != tc.field {
				t.Errorf("DecodeError %+v, want field %s and cause %v", de, tc.field, tc.cause)
			}
			if got := rx.Count(); got != tc.prelude {
				t.Errorf("%d frames delivered, want %d", got, tc.prelude)
			}
			if c.Err() != err {
				t.Errorf("Err() = %v, want %v", c.Err(), err)
			}
			// Send after the failure returns the same *ConnError.
			h := frame.Header{Kind: frame.KindHeartbeat}
			serr := c.Send(&h, nil)
			var sce *ioloop.ConnError
			if !errors.As(serr, &sce) || sce != ce {
				t.Errorf("Send after failure = %v, want the *ConnError %p", serr, ce)
			}
			// The peer sees the connection go away.
			var b [64]byte
			for {
				n, err := unix.Read(raw.fd, b[:])
				if n == 0 || err != nil && err != unix.EINTR {
					break
				}
			}
			c.Close() // a no-op on a failed connection
			rx.Check(t)
		})
	}
}

// TestPeerClose: the peer closing is reported as ErrEOF, after the frames
// it sent before closing are delivered.
func TestPeerClose(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := looptest.NewHandler()
			c, raw := rawPeer(t, l, family, 8, rx)
			want := frame.Header{Kind: frame.KindSend, Tag: 1}
			raw.write(t, looptest.EncodeFrame(want, looptest.Patterned(1, 777)))
			got := rx.WaitFrames(t, 1)
			looptest.AssertFrame(t, got[0], want, looptest.Patterned(1, 777), false)
			raw.close()
			ce := looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrEOF)
			if ce.Op != "read" || ce.ID != 8 {
				t.Errorf("ConnError %+v, want Op read and ID 8", ce)
			}
			h := frame.Header{Kind: frame.KindHeartbeat}
			if err := c.Send(&h, nil); !errors.Is(err, ioloop.ErrEOF) {
				t.Errorf("Send after EOF = %v", err)
			}
			rx.Check(t)
		})
	}
}

// TestConnClose: Conn.Close tells the handler ErrClosed, fails a blocked
// Send and later ones, and the peer sees EOF.
func TestConnClose(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	c, raw := rawPeer(t, l, unix.AF_UNIX, 4, rx)
	blocked := blockSender(t, c, wl, frame.Header{Kind: frame.KindSend}, 4<<20)
	c.Close()
	ce := looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrClosed)
	if ce.Op != "close" {
		t.Errorf("Op = %q, want close", ce.Op)
	}
	if err := <-blocked; !errors.Is(err, ioloop.ErrClosed) {
		t.Errorf("blocked Send = %v, want ErrClosed", err)
	}
	h := frame.Header{Kind: frame.KindHeartbeat}
	if err := c.Send(&h, nil); !errors.Is(err, ioloop.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	c.Close()
	// The peer reads what was written and then EOF.
	b := make([]byte, 1<<16)
	for {
		n, err := unix.Read(raw.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("peer read: %v", err)
		}
		if n == 0 {
			break
		}
	}
	rx.Check(t)
}

// TestLoopClose: closing the loop fails every connection with ErrClosed,
// including a blocked Send, refuses new registrations and leaves no
// goroutine behind.
func TestLoopClose(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l, err := ioloop.New(ioloop.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var hs []*looptest.Handler
	var cs []*ioloop.Conn
	for i := range 3 {
		h := looptest.NewHandler()
		c, _ := rawPeer(t, l, unix.AF_UNIX, 10+i, h)
		hs, cs = append(hs, h), append(cs, c)
	}
	ha, hb := looptest.NewHandler(), looptest.NewHandler()
	ca, cb := connPair(t, l, unix.AF_INET, ha, hb)
	hs, cs = append(hs, ha, hb), append(cs, ca, cb)
	blocked := blockSender(t, cs[0], wl, frame.Header{Kind: frame.KindSend}, 4<<20)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		looptest.AssertConnError(t, h.WaitClosed(t), ioloop.ErrClosed)
		hdr := frame.Header{Kind: frame.KindHeartbeat}
		if err := cs[i].Send(&hdr, nil); !errors.Is(err, ioloop.ErrClosed) {
			t.Errorf("Send after Loop.Close = %v", err)
		}
		h.Check(t)
	}
	if err := <-blocked; !errors.Is(err, ioloop.ErrClosed) {
		t.Errorf("blocked Send = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	a, b := socketPair(t, unix.AF_UNIX)
	defer unix.Close(b)
	if _, err := l.Register(a, 99, looptest.NewHandler()); !errors.Is(err, ioloop.ErrClosed) {
		t.Errorf("Register after Close = %v, want ErrClosed", err)
	}
}

// TestLoopLifecycleNoLeak: many loops with traffic, opened and closed,
// leave no goroutines behind.
func TestLoopLifecycleNoLeak(t *testing.T) {
	looptest.LeakCheck(t)
	for range 20 {
		l, err := ioloop.New(ioloop.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rx := looptest.NewHandler()
		ca, _ := connPair(t, l, unix.AF_UNIX, looptest.NewHandler(), rx)
		h := frame.Header{Kind: frame.KindSend}
		if err := ca.Send(&h, looptest.Patterned(0, 10000)); err != nil {
			t.Fatal(err)
		}
		rx.WaitFrames(t, 1)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		rx.WaitClosed(t)
	}
}

func TestOptions(t *testing.T) {
	if _, err := ioloop.New(ioloop.Options{StagingSize: 63}); err == nil {
		t.Error("New accepted a 63-byte staging buffer")
	}
}

// lastWorder is a looptest.Handler that, as its connection fails, writes
// a last word on it (Failer) and notes whether the connection was marked
// failed by then and what it was told.
type lastWorder struct {
	*looptest.Handler
	failing  atomic.Pointer[error]
	marked   atomic.Bool
	wroteAll atomic.Bool
}

func (h *lastWorder) Failing(c *ioloop.Conn, err error) {
	h.failing.Store(&err)
	h.marked.Store(c.Err() != nil)
	f := frame.Header{Kind: frame.KindHeartbeat}
	h.wroteAll.Store(c.LastWord(&f, nil))
}

// TestLastWord: a Failer is told once, with the connection already marked
// failed with the first cause; its last word reaches the peer ahead of
// the end; and a last word whose write fails (the peer is gone) does not
// replace the cause the connection fails with.
func TestLastWord(t *testing.T) {
	errFault := errors.New("a fault found here")
	t.Run("written", func(t *testing.T) {
		looptest.LeakCheck(t)
		l := looptest.NewLoop(t, ioloop.Options{})
		h := &lastWorder{Handler: looptest.NewHandler()}
		c, raw := rawPeer(t, l, unix.AF_UNIX, 1, h)
		c.Abort(errFault)
		got, _, err := raw.readFrame(4096)
		if err != nil || got.Kind != frame.KindHeartbeat {
			t.Fatalf("the peer read %v, %v, want the last word ahead of the end", got.Kind, err)
		}
		if !h.marked.Load() || !h.wroteAll.Load() || !errors.Is(*h.failing.Load(), errFault) {
			t.Fatalf("Failing: marked %v, written %v, told %v", h.marked.Load(), h.wroteAll.Load(), *h.failing.Load())
		}
		if err := h.WaitClosed(t); !errors.Is(err, errFault) {
			t.Fatalf("Closed with %v, want the fault", err)
		}
	})
	t.Run("peer gone", func(t *testing.T) {
		looptest.LeakCheck(t)
		l := looptest.NewLoop(t, ioloop.Options{})
		h := &lastWorder{Handler: looptest.NewHandler()}
		c, raw := rawPeer(t, l, unix.AF_UNIX, 1, h)
		raw.close()
		c.Abort(errFault)
		if err := h.WaitClosed(t); !errors.Is(err, errFault) {
			t.Fatalf("Closed with %v, want the fault, not the last word's failed write", err)
		}
		if err := c.Err(); !errors.Is(err, errFault) {
			t.Fatalf("Err() = %v, want the fault", err)
		}
	})
}
