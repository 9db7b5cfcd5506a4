package ioloop_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestWaitCancel: with the peer not reading, a frame started and partly
// written survives WaitCancel (nil: it is finished in the background from
// a copy, so its payload may be reused), and a frame queued behind it is
// dropped (ErrCanceled); the stream stays intact.
func TestWaitCancel(t *testing.T) {
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_UNIX, 7, looptest.NewHandler())
	const size = 8 << 20
	first := bytes.Repeat([]byte{0xA5}, size)
	h1 := frame.Header{Kind: frame.KindSend, Tag: 1}
	w1, err := c.Start(&h1, first)
	if err != nil {
		t.Fatal(err)
	}
	h2 := frame.Header{Kind: frame.KindSend, Tag: 2}
	w2, err := c.Start(&h2, make([]byte, size))
	if err != nil {
		t.Fatal(err)
	}
	cancel := make(chan struct{})
	close(cancel)
	if err := w2.WaitCancel(cancel); !errors.Is(err, ioloop.ErrCanceled) {
		t.Fatalf("queued frame: WaitCancel = %v, want ErrCanceled", err)
	}
	if err := w1.WaitCancel(cancel); err != nil {
		t.Fatalf("started frame: WaitCancel = %v, want nil", err)
	}
	clear(first) // the background copy is what goes out
	hb := frame.Header{Kind: frame.KindHeartbeat}
	if err := c.Post(&hb, nil, false); err != nil {
		t.Fatal(err)
	}
	h, p, err := raw.readFrame(size)
	if err != nil || h.Tag != 1 || len(p) != size || !bytes.Equal(p, bytes.Repeat([]byte{0xA5}, size)) {
		t.Fatalf("first frame: %+v, %d bytes, %v", h, len(p), err)
	}
	if h, _, err := raw.readFrame(64); err != nil || h.Kind != frame.KindHeartbeat {
		t.Fatalf("next frame: %+v, %v (the dropped frame must not be sent)", h, err)
	}
}
