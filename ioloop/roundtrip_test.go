package ioloop_test

import (
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

var roundTripSizes = []int{0, 1, 31, 32, 33, 4095, 4096, 65536, 1 << 20, 8 << 20}

// TestRoundTrip sends frames of awkward sizes back to back and checks every
// byte, into handler-named buffers and into pooled buffers, over a unix
// socket pair and over loopback TCP.
func TestRoundTrip(t *testing.T) {
	for _, family := range families {
		for _, named := range []bool{true, false} {
			name := fmt.Sprintf("%s/named=%v", familyName(family), named)
			t.Run(name, func(t *testing.T) {
				looptest.LeakCheck(t)
				l := looptest.NewLoop(t, ioloop.Options{})
				rx := looptest.NewHandler()
				if named {
					rx.Named = looptest.NamedAll
				}
				tx := looptest.NewHandler()
				ca, cb := connPair(t, l, family, tx, rx)

				var hdrs []frame.Header
				var payloads [][]byte
				for i, n := range roundTripSizes {
					h := frame.Header{Kind: frame.KindPut, Flags: frame.FlagMore, Src: uint32(i), Tag: 7, Aux: uint32(n), Offset: uint64(i) << 40}
					p := looptest.Patterned(uint64(i), n)
					hdrs, payloads = append(hdrs, h), append(payloads, p)
					sent := h
					if err := ca.Send(&sent, p); err != nil {
						t.Fatalf("Send %d bytes: %v", n, err)
					}
					if sent.Length != uint64(n) {
						t.Errorf("Send set Length %d, want %d", sent.Length, n)
					}
				}
				got := rx.WaitFrames(t, len(roundTripSizes))
				if len(got) != len(roundTripSizes) {
					t.Fatalf("got %d frames, want %d", len(got), len(roundTripSizes))
				}
				for i := range got {
					looptest.AssertFrame(t, got[i], hdrs[i], payloads[i], named)
				}
				rx.Check(t)
				tx.Check(t)
				if tx.Count() != 0 {
					t.Errorf("sender received %d frames", tx.Count())
				}
				if err := cb.Err(); err != nil {
					t.Errorf("receiver failed: %v", err)
				}
			})
		}
	}
}

// TestRoundTripBothWays sends in both directions at once, mixing named and
// pooled destinations, with a staging buffer of the minimum size so that
// headers straddle reads.
func TestRoundTripBothWays(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{StagingSize: 2 * frame.HeaderSize, DirectRead: 100})
	ha, hb := looptest.NewHandler(), looptest.NewHandler()
	odd := func(h *frame.Header) bool { return h.Aux%2 == 1 }
	ha.Named, hb.Named = odd, odd
	ca, cb := connPair(t, l, unix.AF_INET, ha, hb)
	const frames = 300
	send := func(c *ioloop.Conn, src uint32, errc chan<- error) {
		for i := range frames {
			h := frame.Header{Kind: frame.KindSend, Src: src, Aux: uint32(i)}
			if err := c.Send(&h, looptest.Patterned(uint64(src)<<20|uint64(i), i*37%1000)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}
	errc := make(chan error, 2)
	go send(ca, 1, errc)
	go send(cb, 2, errc)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		h   *looptest.Handler
		src uint32
	}{{hb, 1}, {ha, 2}} {
		got := tc.h.WaitFrames(t, frames)
		for i, f := range got {
			want := frame.Header{Kind: frame.KindSend, Src: tc.src, Aux: uint32(i)}
			looptest.AssertFrame(t, f, want, looptest.Patterned(uint64(tc.src)<<20|uint64(i), i*37%1000), i%2 == 1)
		}
		tc.h.Check(t)
	}
}

// TestPayloadOfWrongLength: a named buffer of the wrong length is ignored
// and the payload lands in a pooled buffer.
func TestPayloadOfWrongLength(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := &wrongLenHandler{Handler: looptest.NewHandler()}
	ca, _ := connPair(t, l, unix.AF_UNIX, looptest.NewHandler(), rx)
	p := looptest.Patterned(3, 5000)
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, p); err != nil {
		t.Fatal(err)
	}
	got := rx.WaitFrames(t, 1)
	looptest.AssertFrame(t, got[0], frame.Header{Kind: frame.KindSend}, p, false)
}

type wrongLenHandler struct{ *looptest.Handler }

func (w *wrongLenHandler) Payload(*ioloop.Conn, *frame.Header) []byte { return make([]byte, 10) }
