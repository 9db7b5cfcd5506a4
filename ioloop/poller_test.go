package ioloop_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Conns over a Poller stream (a pipe in shared memory, internal/link/shm),
// whose arrivals are announced only on request.

// TestPipePollServesEdge: a bell that comes while a lazy Poll holds the
// read side, before it looks at pending, is served by that Poll strictly:
// it asks for the next bell, so a frame written after it is delivered.
// (A Poll that cleared pending and then drained lazily left the pipe
// unarmed, the writer rang no bell for the next frame, and it sat in the
// ring: TestFloodBounded/rts hung that way.)
func TestPipePollServesEdge(t *testing.T) {
	looptest.LeakCheck(t)
	var (
		inPoll atomic.Bool
		c      *ioloop.Conn
		raw    *shm.Pipe
	)
	write := func(tag uint32) {
		b := looptest.EncodeFrame(frame.Header{Kind: frame.KindSend, Tag: tag}, looptest.Patterned(uint64(tag), 100))
		if n, err := raw.Writev([][]byte{b}); err != nil || n != len(b) {
			t.Fatalf("raw write: %d, %v", n, err)
		}
	}
	ioloop.SetTestHookLocked(func(int) {
		if !inPoll.CompareAndSwap(true, false) {
			return
		}
		write(2) // rings the bell the loop's last drain asked for
		looptest.WaitFor(t, "the loop to see the bell while Poll holds the read side", func() bool { return ioloop.ReadPending(c) })
	})
	t.Cleanup(func() { ioloop.SetTestHookLocked(nil) })
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	c, raw, _, _ = looptest.RawPipe(t, l, 64<<10, rx)
	write(1) // registration's drain asked for a bell: the loop delivers it
	rx.WaitFrames(t, 1)
	inPoll.Store(true)
	for deadline := time.Now().Add(looptest.WaitTimeout); inPoll.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Poll never took the read side")
		}
		c.Poll() // does nothing while the loop's drain of frame 1 holds it
	}
	rx.WaitFrames(t, 2)
	write(3) // rings only if the drain that served the bell asked again
	rx.WaitFrames(t, 3)
	for i, f := range rx.Snapshot() {
		looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Tag: uint32(i + 1)}, looptest.Patterned(uint64(i+1), 100), false)
	}
	rx.Check(t)
}
