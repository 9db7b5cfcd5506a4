package ioloop_test

// Regression tests for defects found while reviewing the package, all
// fixed since; the comment on each test names the cause.

import (
	"bytes"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestEOFWithDataInOneEdge: when the peer's last bytes and its FIN are
// reported by one edge-triggered event, the connection must still see EOF.
//
// Regression test. The first version of conn_read.go (Conn.read) treated a
// read shorter than the buffer as "socket drained" (rd.short = n < len(p))
// and drainLocked stopped there; the read that returned the last bytes was
// short, so the EOF behind them was never read, and no further edge came:
// Handler.Closed was never called. The current Conn.read ends a drain only
// on EAGAIN, which fixes it. The loop goroutine is held busy in another
// connection's Deliver so that data and FIN are reported together.
func TestEOFWithDataInOneEdge(t *testing.T) {
	l := bugLoop(t)

	gate, entered := make(chan struct{}), make(chan struct{})
	blocker := looptest.NewHandler()
	blocker.OnDeliver = func(*ioloop.Conn, *frame.Header, int) {
		select {
		case <-entered:
		default:
			close(entered)
			<-gate
		}
	}
	_, rawX := rawPeer(t, l, unix.AF_UNIX, 1, blocker)
	rx := looptest.NewHandler()
	cy, rawY := rawPeer(t, l, unix.AF_UNIX, 2, rx)

	rawX.write(t, looptest.EncodeFrame(frame.Header{Kind: frame.KindHeartbeat}, nil))
	select {
	case <-entered: // the loop goroutine is inside Deliver of connection 1
	case <-time.After(looptest.WaitTimeout):
		t.Fatal("no delivery on connection 1")
	}
	want := frame.Header{Kind: frame.KindGoodbye}
	rawY.write(t, looptest.EncodeFrame(want, nil))
	rawY.close()
	time.Sleep(10 * time.Millisecond)
	close(gate)

	got := rx.WaitFrames(t, 1)
	looptest.AssertFrame(t, got[0], want, nil, false)
	select {
	case <-rx.Done():
		looptest.AssertConnError(t, rx.Err(), ioloop.ErrEOF)
	case <-time.After(time.Second):
		cy.Progress()
		t.Fatalf("peer closed after its last frame, but Handler.Closed was never called; "+
			"the EOF behind the short read is left unread (an explicit Progress then reports it: %v)", rx.IsClosed())
	}
}

// TestCloseFromDeliver: a handler may close its connection from Deliver,
// e.g. on a GOODBYE frame.
//
// Regression test. Conn.fail used to call Conn.release, which locked
// the read side; Deliver (and Payload) run with it owned by the same goroutine,
// so Close deadlocked, and the delivering goroutine and the connection's
// fd stayed stuck forever. fail now takes the read side only if it is free
// (releaseIfDue), and the reader releases the connection as it leaves.
func TestCloseFromDeliver(t *testing.T) {
	l := bugLoop(t)
	returned := make(chan struct{})
	rx := looptest.NewHandler()
	rx.OnDeliver = func(c *ioloop.Conn, h *frame.Header, _ int) {
		if h.Kind == frame.KindGoodbye {
			c.Close()
			close(returned)
		}
	}
	c, raw := rawPeer(t, l, unix.AF_UNIX, 1, rx)
	// Deliver on a goroutine of the test, not on the loop goroutine, so
	// that a deadlock does not also take the loop down: pause, let the
	// loop see the bytes and leave them, and Resume elsewhere.
	c.Pause()
	raw.write(t, looptest.EncodeFrame(frame.Header{Kind: frame.KindGoodbye}, nil))
	time.Sleep(20 * time.Millisecond)
	go c.Resume()
	select {
	case <-returned:
	case <-time.After(time.Second):
		t.Fatal("Conn.Close called from Handler.Deliver deadlocked")
	}
	looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrClosed)
}

// TestCloseFromClosed: "Closing a failed connection does nothing", also
// from Handler.Closed.
//
// Regression test. Conn.fail used to run the handler's Closed inside
// failOnce.Do; a Close from there called failOnce.Do again, which
// deadlocked (sync.Once: "if f calls Do, it will deadlock"). fail now
// claims the connection with a CompareAndSwap of c.failed, so a second
// Close returns at once.
func TestCloseFromClosed(t *testing.T) {
	l := bugLoop(t)
	returned := make(chan struct{})
	rx := looptest.NewHandler()
	rx.OnClosed = func(c *ioloop.Conn, _ error) {
		c.Close()
		close(returned)
	}
	c, _ := rawPeer(t, l, unix.AF_UNIX, 1, rx)
	go c.Close()
	select {
	case <-returned:
	case <-time.After(time.Second):
		t.Fatal("Conn.Close called from Handler.Closed deadlocked")
	}
}

// bugLoop starts a loop for a test that may leave it deadlocked: it is
// closed at the end only if the test passed.
func bugLoop(t *testing.T) *ioloop.Loop {
	t.Helper()
	l, err := ioloop.New(ioloop.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			looptest.CloseLoop(t, l)
		}
	})
	return l
}

// TestSendCancelStartedFrame: canceling a frame that is partly written
// keeps the stream intact, SendCancel returns nil, and the payload may be
// reused at once; the rest of the frame still reaches the peer.
//
// Regression test for the SendCancel "detach" change to conn_write.go:
// Conn.detach owns the write side, waiting for it, while it copies the
// payload. A writable edge that arrives meanwhile finds the side owned:
// onWritable asks and its flush gives up, trusting the owner to look at
// what was asked as it lets go, which detach did not. The edge was
// consumed, the socket writable, and nobody wrote the rest of the frame:
// the stream stalled until some later Send happened to flush. The peer
// drains the socket while detach copies (a 16 MiB payload takes
// milliseconds), which lost the edge in nearly every attempt. detach now
// releases the side as every owner does (owner.go) and flushes.
func TestSendCancelStartedFrame(t *testing.T) {
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	const size = 16 << 20
	want := looptest.Filled(size)
	payload := bytes.Clone(want)
	buf := make([]byte, 1<<20)
	for attempt := range 3 {
		c, raw := rawPeer(t, l, unix.AF_UNIX, 100+attempt, looptest.NewHandler())
		// A stalled stream shows as a read timing out.
		if err := unix.SetsockoptTimeval(raw.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 500000}); err != nil {
			t.Fatal(err)
		}
		copy(payload, want)
		cancel := make(chan struct{})
		res := make(chan error, 1)
		go func() {
			h := frame.Header{Kind: frame.KindPut, Aux: uint32(attempt)}
			err := c.SendCancel(&h, payload, cancel)
			if err == nil {
				clear(payload[:size/2]) // the caller may reuse it now
			}
			res <- err
		}()
		looptest.WaitFor(t, "the frame to block", func() bool {
			for _, w := range wl.of(c.ID()) {
				if w.n == 0 {
					return true
				}
			}
			return false
		})
		close(cancel)
		time.Sleep(time.Duration(attempt+1) * 500 * time.Microsecond)

		var hb [frame.HeaderSize]byte
		if err := raw.readFull(hb[:], len(hb)); err != nil {
			t.Fatal(err)
		}
		if h, err := frame.Decode(hb[:], 0); err != nil || h.Aux != uint32(attempt) || h.Length != size {
			t.Fatalf("header %+v, %v", h, err)
		}
		got := make([]byte, 0, size)
		for len(got) < size {
			n, err := unix.Read(raw.fd, buf[:min(len(buf), size-len(got))])
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				t.Fatalf("attempt %d: the stream stalled after %d of %d payload bytes (read: %d, %v); SendCancel returned %d times",
					attempt, len(got), size, n, err, len(res))
			}
			got = append(got, buf[:n]...)
		}
		if err := <-res; err != nil {
			t.Fatalf("SendCancel of a started frame = %v, want nil", err)
		}
		if i := looptest.FirstDiff(got, want); i != size {
			t.Fatalf("payload differs at byte %d", i)
		}
		// The connection still works.
		h := frame.Header{Kind: frame.KindHeartbeat}
		if err := c.Send(&h, nil); err != nil {
			t.Fatal(err)
		}
		if h, _, err := raw.readFrame(64); err != nil || h.Kind != frame.KindHeartbeat {
			t.Fatalf("frame after the canceled one: %+v, %v", h, err)
		}
		c.Close()
	}
}
