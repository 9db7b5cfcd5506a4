package ioloop_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/racedetect"
	"github.com/boltmesh/boltmesh/ioloop"
)

// TestBufferPool: GetBuffer returns exactly n bytes, also for buffers
// recycled through PutBuffer from other sizes of the same class.
func TestBufferPool(t *testing.T) {
	sizes := []int{0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 4095, 4096, 4097, 65536, 1<<20 - 1, 1 << 20, 1<<20 + 1}
	for round := range 3 {
		for _, n := range sizes {
			bb := ioloop.GetBuffer(n)
			if len(bb.B) != n {
				t.Fatalf("round %d: GetBuffer(%d) has %d bytes", round, n, len(bb.B))
			}
			if n > 0 {
				bb.B[0], bb.B[n-1] = 1, 2
			}
			ioloop.PutBuffer(bb)
		}
	}
	ioloop.PutBuffer(ioloop.GetBuffer(0))
}

// TestBufferPoolEmptyAllocs: the buffer of an empty payload (a WAKE, an
// empty SEND nobody waited for) is recycled like any other: a GetBuffer
// and PutBuffer of 0 bytes allocate nothing once warm. (They allocated
// a Buffer each time: PutBuffer drops buffers without capacity.)
func TestBufferPoolEmptyAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	ioloop.PutBuffer(ioloop.GetBuffer(0))
	if a := testing.AllocsPerRun(1000, func() { ioloop.PutBuffer(ioloop.GetBuffer(0)) }); a != 0 {
		t.Errorf("%v allocations per GetBuffer(0) and PutBuffer, want 0", a)
	}
}
