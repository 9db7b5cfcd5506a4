package ioloop_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestPauseResume: Pause from Deliver stops delivery after that frame, and
// holds the sender back once the socket buffers are full; Resume delivers
// the rest in order.
func TestPauseResume(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := looptest.NewHandler()
			rx.Named = func(h *frame.Header) bool { return h.Aux%2 == 0 }
			const pauseAt = 3
			var delivered atomic.Int32
			rx.OnDeliver = func(c *ioloop.Conn, h *frame.Header, n int) {
				if delivered.Add(1) == pauseAt {
					c.Pause()
				}
			}
			ca, cb := connPairBuf(t, l, family, 128<<10, looptest.NewHandler(), rx)

			// Small frames: all of them fit in the socket buffers.
			const small = 20
			for i := range small {
				h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
				if err := ca.Send(&h, looptest.Patterned(uint64(i), 100+i)); err != nil {
					t.Fatal(err)
				}
			}
			rx.WaitFrames(t, pauseAt)
			time.Sleep(50 * time.Millisecond)
			if n := rx.Count(); n != pauseAt {
				t.Fatalf("%d frames delivered while paused, want %d", n, pauseAt)
			}

			// Large frames: the sender blocks while the receiver is paused.
			const large, largeSize = 64, 128 << 10
			sent := make(chan error, 1)
			go func() {
				for i := small; i < small+large; i++ {
					h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
					if err := ca.Send(&h, looptest.Patterned(uint64(i), largeSize)); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			select {
			case err := <-sent:
				t.Fatalf("8 MiB were sent to a paused receiver (err %v)", err)
			case <-time.After(100 * time.Millisecond):
			}
			if n := rx.Count(); n != pauseAt {
				t.Fatalf("%d frames delivered while paused, want %d", n, pauseAt)
			}

			cb.Resume()
			got := rx.WaitFrames(t, small+large)
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			for i, f := range got {
				size := 100 + i
				if i >= small {
					size = largeSize
				}
				looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), size), i%2 == 0)
			}
			if len(got) != small+large {
				t.Errorf("got %d frames, want %d", len(got), small+large)
			}
			rx.Check(t)
		})
	}
}

// TestPauseFromOutside: Pause called by another goroutine stops delivery;
// Resume restarts it, also for bytes that arrived while paused.
func TestPauseFromOutside(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	c, raw := rawPeer(t, l, unix.AF_UNIX, 1, rx)
	c.Pause()
	c.Pause()
	var wire []byte
	for i := range 10 {
		wire = append(wire, looptest.EncodeFrame(frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 50))...)
	}
	raw.write(t, wire)
	time.Sleep(50 * time.Millisecond)
	c.Progress()
	if n := rx.Count(); n != 0 {
		t.Fatalf("%d frames delivered while paused", n)
	}
	c.Resume()
	c.Resume()
	got := rx.WaitFrames(t, 10)
	for i, f := range got {
		looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 50), false)
	}
	rx.Check(t)
}

// deferring is a looptest.Handler whose Payload defers every frame while
// hold is set.
type deferring struct {
	*looptest.Handler
	hold atomic.Bool
}

func (d *deferring) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if d.hold.Load() {
		c.Defer()
		return nil
	}
	return d.Handler.Payload(c, h)
}

// TestDeferred: Deferred reports a payload the handler deferred, from the
// Payload call that deferred it until one after Resume names a buffer; a
// frame delivered before it, or reading that goes on after, does not.
func TestDeferred(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := &deferring{Handler: looptest.NewHandler()}
			ca, cb := connPairBuf(t, l, family, 0, looptest.NewHandler(), rx)
			send := func(aux uint32) {
				h := frame.Header{Kind: frame.KindSend, Aux: aux}
				if err := ca.Send(&h, looptest.Patterned(uint64(aux), 1000)); err != nil {
					t.Fatal(err)
				}
			}
			send(0)
			rx.WaitFrames(t, 1)
			if cb.Deferred() {
				t.Fatal("Deferred after a frame delivered")
			}
			rx.hold.Store(true)
			send(1)
			for end := time.Now().Add(10 * time.Second); !cb.Deferred(); time.Sleep(time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("Deferred never reported the deferred payload")
				}
			}
			cb.Resume() // asks again: deferred again
			if !cb.Deferred() || rx.Count() != 1 {
				t.Fatalf("after a Resume that deferred again: Deferred %v, %d frames delivered, want true and 1", cb.Deferred(), rx.Count())
			}
			rx.hold.Store(false)
			cb.Resume()
			got := rx.WaitFrames(t, 2)
			if cb.Deferred() {
				t.Fatal("Deferred after the payload was read")
			}
			looptest.AssertFrame(t, got[1], frame.Header{Kind: frame.KindSend, Aux: 1}, looptest.Patterned(1, 1000), false)
		})
	}
}

// TestReadArrived: what has arrived is delivered by the time ReadArrived
// returns, whether it read it itself or waited for the loop's reading
// under way; over and over, so that both happen.
func TestReadArrived(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	c, raw := rawPeer(t, l, unix.AF_UNIX, 1, rx)
	for i := range 200 {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		var hb [frame.HeaderSize]byte
		h.Length = 100
		h.Encode(&hb)
		raw.write(t, append(hb[:], looptest.Patterned(uint64(i), 100)...))
		c.ReadArrived(time.Second)
		if n := rx.Count(); n != i+1 {
			t.Fatalf("frame %d: %d frames delivered when ReadArrived returned, want %d", i, n, i+1)
		}
	}
}
