package collective_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestAllReduceSingleCopy: with engine.Options.SingleCopyMin on, the
// pieces of an allreduce between neighbours go by single copy, read from
// the sender's buffer when the receiver takes them; recursive doubling
// reduces into the very buffer it sends, so a piece must have left before
// its place is overwritten (the engine's settleCopies). Every algorithm
// that exchanges, every world up to 4, lengths across the piece size,
// results checked element by element.
func TestAllReduceSingleCopy(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("single copy is Linux's process_vm_readv")
	}
	for _, alg := range []collective.Algorithm{collective.AlgorithmDoubling, collective.AlgorithmRing, collective.AlgorithmHalving} {
		for _, n := range []int{2, 3, 4} {
			cs := newCommsOn(t, n, engine.Options{HeapSize: 1 << 20, SingleCopyMin: 64 << 10}, collective.Options{Algorithm: alg, Chunk: 128 << 10})
			for _, length := range []int{1 << 14, 1<<16 + 3, 1 << 18} {
				for _, op := range []collective.Op{collective.Sum, collective.Prod} {
					t.Run(fmt.Sprintf("%v/n=%d/len=%d/%v", alg, n, length, op), func(t *testing.T) {
						checkAllReduce[float64](t, cs, op, length)
					})
				}
			}
		}
	}
}
