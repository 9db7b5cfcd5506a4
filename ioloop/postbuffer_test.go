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
