package faulty_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/faulty"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// pair registers both ends of a Unix socket pair on a new loop, the
// receiving end (handler rx) under a faulty Stream, and returns the
// sending Conn and the fault controls.
func pair(t *testing.T, rx ioloop.Handler) (*ioloop.Conn, *faulty.Stream) {
	t.Helper()
	tx, _, f := faultyPair(t, false, rx)
	return tx, f
}

// faultyPair registers both ends of a Unix socket pair on a new loop, the
// sending end (tx) or the receiving one (handler rx) under a faulty
// Stream, and returns both Conns and the fault controls.
func faultyPair(t *testing.T, sender bool, rx ioloop.Handler) (tx, rc *ioloop.Conn, f *faulty.Stream) {
	t.Helper()
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	end, plain := fds[1], fds[0]
	if sender {
		end, plain = fds[0], fds[1]
	}
	s, err := ioloop.SocketStream(end)
	if err != nil {
		unix.Close(plain)
		t.Fatal(err)
	}
	f = faulty.Wrap(s)
	var h ioloop.Handler = looptest.NopHandler{}
	if !sender {
		h = rx
	}
	wrapped, err := l.RegisterStream(f, 2, h, nil)
	if err != nil {
		unix.Close(plain)
		t.Fatal(err)
	}
	h = rx
	if !sender {
		h = looptest.NopHandler{}
	}
	other, err := l.Register(plain, 1, h)
	if err != nil {
		t.Fatal(err)
	}
	if sender {
		return wrapped, other, f
	}
	return other, wrapped, f
}

func send(t *testing.T, c *ioloop.Conn, aux uint32, p []byte) {
	t.Helper()
	h := frame.Header{Kind: frame.KindSend, Aux: aux}
	if err := c.Send(&h, p); err != nil {
		t.Fatal(err)
	}
}

// TestStall: while stalled, nothing is delivered; once let go, what came
// meanwhile is, whole and in order.
func TestStall(t *testing.T) {
	rx := looptest.NewHandler()
	tx, f := pair(t, rx)
	send(t, tx, 0, looptest.Patterned(0, 100))
	rx.WaitFrames(t, 1)
	f.Stall(true)
	for i := 1; i <= 3; i++ {
		send(t, tx, uint32(i), looptest.Patterned(uint64(i), 1000))
	}
	time.Sleep(50 * time.Millisecond)
	if n := rx.Count(); n != 1 {
		t.Fatalf("%d frames delivered while stalled, want the 1 from before", n)
	}
	f.Stall(false)
	got := rx.WaitFrames(t, 4)
	for i := 1; i <= 3; i++ {
		looptest.AssertFrame(t, got[i], frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 1000), false)
	}
	rx.Check(t)
}

// TestStallAfter: the bytes up to the stall point are delivered, the
// frame they end inside is not, nor anything after it; once let go,
// everything is, whole and in order.
func TestStallAfter(t *testing.T) {
	rx := looptest.NewHandler()
	tx, f := pair(t, rx)
	f.StallAfter(frame.HeaderSize + 100 + frame.HeaderSize + 500) // the first frame and half the second
	send(t, tx, 1, looptest.Patterned(1, 100))
	send(t, tx, 2, looptest.Patterned(2, 1000))
	send(t, tx, 3, looptest.Patterned(3, 10))
	rx.WaitFrames(t, 1)
	time.Sleep(50 * time.Millisecond)
	if n := rx.Count(); n != 1 || !f.Stalled() {
		t.Fatalf("%d frames delivered before the stall point (want 1), stalled %v", n, f.Stalled())
	}
	f.Stall(false)
	got := rx.WaitFrames(t, 3)
	for i := 1; i <= 2; i++ {
		n := []int{100, 1000}[i-1]
		looptest.AssertFrame(t, got[i-1], frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), n), false)
	}
	looptest.AssertFrame(t, got[2], frame.Header{Kind: frame.KindSend, Aux: 3}, looptest.Patterned(3, 10), false)
	rx.Check(t)
}

// TestDelay: a frame is delivered whole, no sooner than the delay after
// it was sent.
func TestDelay(t *testing.T) {
	rx := looptest.NewHandler()
	tx, f := pair(t, rx)
	const d = 60 * time.Millisecond
	f.Delay(d)
	start := time.Now()
	send(t, tx, 1, looptest.Patterned(1, 5000))
	got := rx.WaitFrames(t, 1)
	if took := time.Since(start); took < d {
		t.Fatalf("delivered %v after it was sent, want at least %v", took, d)
	}
	looptest.AssertFrame(t, got[0], frame.Header{Kind: frame.KindSend, Aux: 1}, looptest.Patterned(1, 5000), false)
	rx.Check(t)
}

// TestCorrupt: the byte flipped is the one asked for: in a payload, the
// frame comes altered there; in a header's kind, the Conn fails with
// ErrProtocol.
func TestCorrupt(t *testing.T) {
	rx := looptest.NewHandler()
	tx, f := pair(t, rx)
	payload := looptest.Patterned(2, 64)
	f.Corrupt(frame.HeaderSize + 10)
	send(t, tx, 2, payload)
	got := rx.WaitFrames(t, 1)
	want := bytes.Clone(payload)
	want[10] ^= 0xff
	if !bytes.Equal(got[0].Payload, want) {
		t.Fatalf("payload byte 10 not flipped alone (first difference from the flipped at %d)", looptest.FirstDiff(got[0].Payload, want))
	}
	f.Corrupt(0) // the next header's kind
	send(t, tx, 3, payload)
	looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrProtocol)
}

// TestCut: the receiving Conn ends, and so does the sender's.
func TestCut(t *testing.T) {
	rx := looptest.NewHandler()
	tx, f := pair(t, rx)
	f.Cut()
	if err := rx.WaitClosed(t); err == nil {
		t.Fatal("Closed with no error after a cut")
	}
	var err error
	for end := time.Now().Add(looptest.WaitTimeout); err == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
		h := frame.Header{Kind: frame.KindSend}
		err = tx.Send(&h, nil)
	}
	var ce *ioloop.ConnError
	if !errors.As(err, &ce) {
		t.Fatalf("sending after the cut: %v, want a *ConnError", err)
	}
}

// TestDropWrite: the frame of the write after DropWrite never arrives,
// though its sender saw it written, and the frames before and after it
// do, whole and in order.
func TestDropWrite(t *testing.T) {
	rx := looptest.NewHandler()
	tx, _, f := faultyPair(t, true, rx)
	send(t, tx, 0, looptest.Patterned(0, 100))
	f.DropWrite()
	send(t, tx, 1, looptest.Patterned(1, 200))
	send(t, tx, 2, looptest.Patterned(2, 300))
	got := rx.WaitFrames(t, 2)
	looptest.AssertFrame(t, got[0], frame.Header{Kind: frame.KindSend, Aux: 0}, looptest.Patterned(0, 100), false)
	looptest.AssertFrame(t, got[1], frame.Header{Kind: frame.KindSend, Aux: 2}, looptest.Patterned(2, 300), false)
	if n := f.Dropped(); n != frame.HeaderSize+200 {
		t.Fatalf("Dropped() = %d, want the one frame's %d bytes", n, frame.HeaderSize+200)
	}
	time.Sleep(20 * time.Millisecond)
	if n := rx.Count(); n != 2 {
		t.Fatalf("%d frames delivered, want 2", n)
	}
}
