package ioloop_test

import (
	"testing"

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
