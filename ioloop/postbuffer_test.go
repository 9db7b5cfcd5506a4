package ioloop_test

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestPostBuffer posts pooled buffers, many more than a small socket
// buffer takes at once: each frame arrives intact and in order, and done
// runs exactly once per frame with its length.
func TestPostBuffer(t *testing.T) {
	const frames, size = 64, 100 << 10
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	a, _ := connPairBuf(t, l, unix.AF_UNIX, 64<<10, looptest.NopHandler{}, rx)
	var calls, total atomic.Int64
	done := func(n int) { calls.Add(1); total.Add(int64(n)) }
	for i := range frames {
		bb := ioloop.GetBuffer(size)
		copy(bb.B, looptest.Patterned(uint64(i), size))
		h := frame.Header{Kind: frame.KindSend, Tag: uint32(i)}
		if err := a.PostBuffer(&h, bb, done); err != nil {
			t.Fatal(err)
		}
	}
	got := rx.WaitFrames(t, frames)
	for i, f := range got {
		if f.Hdr.Tag != uint32(i) || !bytes.Equal(f.Payload, looptest.Patterned(uint64(i), size)) {
			t.Fatalf("frame %d: tag %d, payload equal %v", i, f.Hdr.Tag, bytes.Equal(f.Payload, looptest.Patterned(uint64(i), size)))
		}
	}
	rx.Check(t)
	looptest.WaitFor(t, "every done callback", func() bool { return calls.Load() == frames })
	if total.Load() != frames*size {
		t.Fatalf("done reported %d bytes, want %d", total.Load(), frames*size)
	}
}

// TestQueueFlush: queued frames stay unwritten until Flush (or another
// send), then go out in order, payloads copied at Queue time.
func TestQueueFlush(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	a, _ := connPair(t, l, unix.AF_UNIX, looptest.NopHandler{}, rx)
	buf := []byte("first")
	h := frame.Header{Kind: frame.KindSend, Tag: 1}
	if err := a.Queue(&h, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX") // Queue copied the payload
	h2 := frame.Header{Kind: frame.KindSend, Tag: 2}
	if err := a.Queue(&h2, []byte("second")); err != nil {
		t.Fatal(err)
	}
	ioloop.Writable(a) // as the loop does, at any time (the socket is writable)
	if a.Queued() != 2 || rx.Count() != 0 {
		t.Fatalf("before Flush: %d queued, %d delivered", a.Queued(), rx.Count())
	}
	a.Flush()
	got := rx.WaitFrames(t, 2)
	if string(got[0].Payload) != "first" || string(got[1].Payload) != "second" || got[1].Hdr.Tag != 2 {
		t.Fatalf("got %q %q", got[0].Payload, got[1].Payload)
	}
	rx.Check(t)
}

// TestPostBufferBacklog: frames without a payload posted by the
// thousand to a peer that reads nothing for a while (a star
// coordinator's slow worker) are done only once written, each done
// once; and once the backlog is written, the connection keeps at most
// KeepFree requests and KeepQueue frames of room for reuse, not the
// backlog's.
func TestPostBufferBacklog(t *testing.T) {
	const frames = 20_000
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_UNIX, 1, looptest.NopHandler{})
	var calls atomic.Int64
	done := func(n int) {
		if n != 0 {
			t.Errorf("done(%d) for a frame without a payload", n)
		}
		calls.Add(1)
	}
	for i := range frames {
		h := frame.Header{Kind: frame.KindCredit, Offset: uint64(i)}
		if err := c.PostBuffer(&h, ioloop.GetBuffer(0), done); err != nil {
			t.Fatal(err)
		}
	}
	// The first frame queued may be written in part, and has no payload
	// to tell its request by: it is done at once (adopt).
	queued := ioloop.QueuedFrames(c)
	if queued == 0 || calls.Load() > int64(frames-queued+1) {
		t.Fatalf("%d frames queued, %d done: done before its frame was written", queued, calls.Load())
	}
	for i := range frames {
		h, _, err := raw.readFrame(64 << 10)
		if err != nil || h.Kind != frame.KindCredit || h.Offset != uint64(i) {
			t.Fatalf("frame %d: %v offset %d, %v", i, h.Kind, h.Offset, err)
		}
	}
	looptest.WaitFor(t, "every done callback", func() bool { return calls.Load() == frames })
	if free, room := ioloop.WriterKept(c); free > ioloop.KeepFree || room > ioloop.KeepQueue {
		t.Fatalf("after the backlog the writer keeps %d requests and room for %d frames, want at most %d and %d", free, room, ioloop.KeepFree, ioloop.KeepQueue)
	}
}
