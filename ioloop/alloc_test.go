package ioloop_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"github.com/boltmesh/boltmesh/ioloop"
)

// intoHandler reads every payload into one fixed buffer and signals each
// delivery on a channel.
type intoHandler struct {
	buf       []byte
	delivered chan int
}

func (h *intoHandler) Payload(_ *ioloop.Conn, hd *frame.Header) []byte {
	return h.buf[:hd.Length]
}

func (h *intoHandler) Deliver(_ *ioloop.Conn, _ *frame.Header, p []byte, bb *ioloop.Buffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
		h.delivered <- -1
		return
	}
	h.delivered <- len(p)
}

func (h *intoHandler) Closed(*ioloop.Conn, error) {}

// TestSteadyStateAllocs: Send and delivery of a 4 KiB frame into a
// handler-named buffer allocate nothing once warm.
func TestSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts mean nothing under the race detector: it makes sync.Pool drop items")
	}
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := &intoHandler{buf: make([]byte, 4096), delivered: make(chan int, 1)}
			ca, _ := connPair(t, l, family, looptest.NopHandler{}, rx)
			payload := looptest.Patterned(1, 4096)
			h := &frame.Header{Kind: frame.KindSend, Tag: 5}
			bad := 0
			roundTrip := func() {
				if err := ca.Send(h, payload); err != nil {
					panic(err)
				}
				if n := <-rx.delivered; n != len(payload) {
					bad++
				}
			}
			for range 200 {
				roundTrip()
			}
			if allocs := testing.AllocsPerRun(500, roundTrip); allocs != 0 {
				t.Errorf("Send + delivery of a 4 KiB frame: %v allocations, want 0", allocs)
			}
			if bad != 0 {
				t.Errorf("%d frames not delivered into the named buffer", bad)
			}
			if looptest.FirstDiff(rx.buf, payload) != len(payload) {
				t.Error("named buffer does not hold the payload")
			}
		})
	}
}
