package engine_test

import (
	"errors"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"sync"
	"testing"

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

func TestHeapAllocCollectiveMismatch(t *testing.T) {
	const ranks = 3
	ts := watchedMesh(t, ranks, engine.Options{HeapSize: 8 << 20})
	extra, err := ts[0].Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	collective := func() ([]engine.SymmetricBuffer, []error) {
		bufs := make([]engine.SymmetricBuffer, ranks)
		errs := make([]error, ranks)
		var wg sync.WaitGroup
		for r, tr := range ts {
			wg.Go(func() { bufs[r], errs[r] = tr.AllocCollective(1<<20, 0) })
		}
		wg.Wait()
		return bufs, errs
	}
	_, errs := collective()
	for r, err := range errs {
		var ae *engine.AllocMismatchError
		if !errors.Is(err, engine.ErrAllocMismatch) || !errors.As(err, &ae) {
			t.Errorf("rank %d: got %v, want an *AllocMismatchError", r, err)
			continue
		}
		// Rank 0 disagrees with everybody; the others only with rank 0.
		wantRank, local, remote := 0, uint64(0), extra.Offset+4096
		if r == 0 {
			wantRank, local, remote = 1, extra.Offset+4096, 0
		}
		if ae.Rank != wantRank || ae.Local.Offset != local || ae.Remote.Offset != remote || ae.Local.Len != 1<<20 || ae.Remote.Len != 1<<20 {
			t.Errorf("rank %d: got %+v, want rank %d, local offset %d, remote offset %d", r, *ae, wantRank, local, remote)
		}
	}
	// Each rank freed its half of the failed allocation.
	for r, tr := range ts {
		want := uint64(0)
		if r == 0 {
			want = 4096
		}
		if got := tr.Heap().InUse(); got != want {
			t.Errorf("rank %d: %d bytes in use after the failed AllocCollective, want %d", r, got, want)
		}
	}
	// In step again, the collective succeeds with the same range everywhere.
	if err := ts[0].Free(extra); err != nil {
		t.Fatal(err)
	}
	bufs, errs := collective()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if bufs[r] != bufs[0].On(r) {
			t.Errorf("rank %d got %+v, rank 0 %+v", r, bufs[r], bufs[0])
		}
	}
	barrierAll(t, ts)
}
