package heap_test

import (
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/heap"
)

func BenchmarkAllocFree(b *testing.B) {
	for _, live := range []int{0, 64, 1024} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			h := newHeap(b, 64<<20)
			// Fragment the heap: live small buffers with holes between.
			for range live {
				mustAlloc(b, h, 100, 0)
				mustFree(b, h, mustAlloc(b, h, 50, 0))
				mustAlloc(b, h, 100, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var last heap.Buffer
			for i := 0; b.Loop(); i++ {
				buf, err := h.Alloc(uint64(256+i%1024), 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := h.Free(buf); err != nil {
					b.Fatal(err)
				}
				last = buf
			}
			if last.Len == 0 {
				b.Fatal("no allocation measured")
			}
		})
	}
}
