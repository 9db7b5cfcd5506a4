package ioloop_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// partsHandler takes every payload longer than part in parts
// (Conn.InParts), records what came, and pauses the connection after
// the pauseAt-th part.
type partsHandler struct {
	part, pauseAt int
	mu            sync.Mutex
	got           []partGot
	changed       chan struct{}
}

// partGot is a part (whole: a frame delivered whole) as the handler saw it.
type partGot struct {
	aux   uint32
	off   uint64
	data  []byte
	whole bool
}

func newPartsHandler(part, pauseAt int) *partsHandler {
	return &partsHandler{part: part, pauseAt: pauseAt, changed: make(chan struct{}, 1)}
}

func (p *partsHandler) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	c.InParts(p.part)
	return nil
}

func (p *partsHandler) note(g partGot) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, g)
	select {
	case p.changed <- struct{}{}:
	default:
	}
	return len(p.got)
}

func (p *partsHandler) Deliver(_ *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	p.note(partGot{aux: h.Aux, data: bytes.Clone(payload), whole: true})
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}

func (p *partsHandler) DeliverPart(c *ioloop.Conn, h *frame.Header, off uint64, bb *ioloop.Buffer) {
	if len(bb.B) > p.part {
		panic("a part longer than asked")
	}
	if p.note(partGot{aux: h.Aux, off: off, data: bytes.Clone(bb.B)}) == p.pauseAt {
		c.Pause()
	}
	ioloop.PutBuffer(bb)
}

func (p *partsHandler) Closed(*ioloop.Conn, error) {}

func (p *partsHandler) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

// wait waits until n parts came, for at most 10 s.
func (p *partsHandler) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for p.count() < n {
		select {
		case <-p.changed:
		case <-deadline:
			t.Fatalf("%d parts came, want %d", p.count(), n)
		}
	}
}

// TestInParts: a payload longer than the part size comes in parts, in
// order, each at most that long and at its offset, whose bytes make the
// payload; a shorter one is delivered whole; Pause from DeliverPart stops
// reading after that part, and Resume reads on.
func TestInParts(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			const part, pauseAt = 64 << 10, 3
			rx := newPartsHandler(part, pauseAt)
			ca, cb := connPairBuf(t, l, family, 128<<10, looptest.NewHandler(), rx)
			sizes := []int{1<<20 + 123, 100, part, 200 << 10}
			want := 0
			for _, n := range sizes {
				want += max(1, (n+part-1)/part)
			}
			sent := make(chan error, 1)
			go func() {
				for i, n := range sizes {
					h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
					if err := ca.Send(&h, looptest.Patterned(uint64(i), n)); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			rx.wait(t, pauseAt)
			time.Sleep(50 * time.Millisecond)
			if n := rx.count(); n != pauseAt {
				t.Fatalf("%d parts came while paused after %d", n, pauseAt)
			}
			cb.Resume()
			rx.wait(t, want)
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			rx.mu.Lock()
			defer rx.mu.Unlock()
			k := 0
			for i, n := range sizes {
				payload := looptest.Patterned(uint64(i), n)
				if n <= part {
					g := rx.got[k]
					k++
					if !g.whole || g.aux != uint32(i) || !bytes.Equal(g.data, payload) {
						t.Fatalf("frame %d of %d bytes: got aux %d, whole %v, %d bytes; want it whole", i, n, g.aux, g.whole, len(g.data))
					}
					continue
				}
				for off := 0; off < n; off += part {
					g := rx.got[k]
					k++
					end := min(off+part, n)
					if g.whole || g.aux != uint32(i) || g.off != uint64(off) || !bytes.Equal(g.data, payload[off:end]) {
						t.Fatalf("frame %d, part at %d: got aux %d, whole %v, off %d, %d bytes; want bytes %d to %d", i, off, g.aux, g.whole, g.off, len(g.data), off, end)
					}
				}
			}
			if k != len(rx.got) {
				t.Fatalf("%d parts came, want %d", len(rx.got), k)
			}
		})
	}
}
