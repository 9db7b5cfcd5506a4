package ioloop_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// TestWakeWritesQueued: frames queued for a later flush (Queue) wait
// until the Conn is woken; the loop then writes them, in order.
func TestWakeWritesQueued(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := looptest.NewHandler()
			ca, _ := connPair(t, l, family, looptest.NewHandler(), rx)
			const n = 5
			for i := range n {
				h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
				if err := ca.Queue(&h, looptest.Patterned(uint64(i), 64+i)); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(20 * time.Millisecond)
			if got := rx.Count(); got != 0 {
				t.Fatalf("%d queued frames arrived before any flush", got)
			}
			ca.Wake()
			ca.Wake() // before the loop serves it: served once
			for i, f := range rx.WaitFrames(t, n) {
				looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 64+i), false)
			}
		})
	}
}

// TestWakeReadsMissedEdge: frames that arrived while reading was paused,
// then unpaused without a read (Unpause), wait with no edge to bring them;
// a Wake has the loop read and deliver them. The handler wakes its own
// Conn from the loop goroutine too, which must not deadlock.
func TestWakeReadsMissedEdge(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := looptest.NewHandler()
			var delivered atomic.Int32
			rx.OnDeliver = func(c *ioloop.Conn, h *frame.Header, n int) {
				switch delivered.Add(1) {
				case 1:
					c.Pause()
				case 2:
					c.Wake() // from the loop goroutine, reading c
				}
			}
			ca, cb := connPair(t, l, family, looptest.NewHandler(), rx)
			const n = 8
			for i := range n {
				h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
				if err := ca.Send(&h, looptest.Patterned(uint64(i), 100)); err != nil {
					t.Fatal(err)
				}
			}
			rx.WaitFrames(t, 1)
			time.Sleep(20 * time.Millisecond)
			cb.Unpause()
			time.Sleep(50 * time.Millisecond)
			if got := rx.Count(); got != 1 {
				t.Fatalf("%d frames delivered after Unpause alone, want 1 (no edge brings the rest)", got)
			}
			cb.Wake()
			for i, f := range rx.WaitFrames(t, n) {
				looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 100), false)
			}
		})
	}
}

// TestWakeClosed: waking a Conn that was closed does nothing but serve
// nothing: no panic, no frame, and the loop goes on serving others.
func TestWakeClosed(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb := connPair(t, l, families[0], looptest.NewHandler(), looptest.NewHandler())
	cb.Close()
	cb.Wake()
	cc, _ := connPair(t, l, families[0], looptest.NewHandler(), rx)
	h := frame.Header{Kind: frame.KindSend, Aux: 1}
	if err := cc.Send(&h, looptest.Patterned(1, 10)); err != nil {
		t.Fatal(err)
	}
	looptest.AssertFrame(t, rx.WaitFrames(t, 1)[0], frame.Header{Kind: frame.KindSend, Aux: 1}, looptest.Patterned(1, 10), false)
	ca.Close()
}
