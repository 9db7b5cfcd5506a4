package engine_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/racedetect"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

func TestHeapSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts mean nothing under the race detector: it makes sync.Pool drop items")
	}
	for _, link := range meshtest.Links {
		t.Run(link.Name, func(t *testing.T) {
			o := link.Opts
			o.HeapSize = 8 << 20
			heapSteadyStateAllocs(t, o)
		})
	}
}

func heapSteadyStateAllocs(t *testing.T, opts engine.Options) {
	ts := watchedMesh(t, 2, opts)
	for _, size := range []int{8, 1 << 20} {
		dst := engine.SymmetricBuffer{Rank: 1, Offset: 4096, Len: uint64(size)}
		src := pattern(0, 1, 0, 0, size)
		buf := make([]byte, size)
		for range 100 { // warm up pools, queues and maps
			if err := ts[0].Put(dst, src); err != nil {
				t.Fatal(err)
			}
			if err := ts[0].Get(dst, buf); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if a := testing.AllocsPerRun(200, func() {
			if e := ts[0].Put(dst, src); e != nil && err == nil {
				err = e
			}
		}); a != 0 {
			t.Errorf("Put of %d bytes: %v allocations, want 0", size, a)
		}
		if a := testing.AllocsPerRun(200, func() {
			if e := ts[0].Get(dst, buf); e != nil && err == nil {
				err = e
			}
		}); a != 0 {
			t.Errorf("Get of %d bytes: %v allocations, want 0", size, a)
		}
		// Quiet after a put waits for it, one fence round trip per peer
		// put to: once warm, that allocates nothing either.
		if a := testing.AllocsPerRun(200, func() {
			e := ts[0].Put(dst, src)
			if e == nil {
				e = ts[0].Quiet()
			}
			if e != nil && err == nil {
				err = e
			}
		}); a != 0 {
			t.Errorf("Put and Quiet of %d bytes: %v allocations, want 0", size, a)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := check(buf, 0, 1, 0, 0, size); err != nil {
			t.Fatal(err)
		}
	}
	barrierAll(t, ts)
}
