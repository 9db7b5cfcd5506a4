package collective_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/heap"
)

// allocAll calls Comm.Alloc on every rank at once.
func allocAll(cs []*collective.Comm, size uint64) ([]engine.SymmetricBuffer, []error) {
	bufs := make([]engine.SymmetricBuffer, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { bufs[r], errs[r] = c.Alloc(context.Background(), size, 0) })
	}
	wg.Wait()
	return bufs, errs
}

// TestAllocMismatch: ranks whose Alloc and Free calls differ get an
// *AllocMismatchError naming the first rank that disagrees, and every
// rank frees its half; in step again, Alloc succeeds with one range.
func TestAllocMismatch(t *testing.T) {
	const ranks = 3
	ts, cs := newOneSidedComms(t, ranks, 8<<20)
	extra, err := ts[0].Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := allocAll(cs, 1<<20)
	for r, err := range errs {
		var ae *collective.AllocMismatchError
		if !errors.Is(err, collective.ErrAllocMismatch) || !errors.As(err, &ae) {
			t.Errorf("rank %d: got %v, want an *AllocMismatchError", r, err)
			continue
		}
		// Rank 0 disagrees with everybody; the others only with rank 0.
		wantRank, local, remote := 0, uint64(0), extra.Offset+4096
		if r == 0 {
			wantRank, local, remote = 1, extra.Offset+4096, 0
		}
		if ae.Rank != wantRank || ae.Failed || ae.Local.Offset != local || ae.Remote.Offset != remote || ae.Local.Len != 1<<20 || ae.Remote.Len != 1<<20 {
			t.Errorf("rank %d: got %+v, want rank %d, local offset %d, remote offset %d", r, *ae, wantRank, local, remote)
		}
	}
	for r, tr := range ts {
		want := uint64(0)
		if r == 0 {
			want = 4096
		}
		if got := tr.Heap().InUse(); got != want {
			t.Errorf("rank %d: %d bytes in use after the failed Alloc, want %d", r, got, want)
		}
	}
	if err := ts[0].Free(extra); err != nil {
		t.Fatal(err)
	}
	bufs, errs := allocAll(cs, 1<<20)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if bufs[r] != bufs[0].On(r) || bufs[r].Len != 1<<20 {
			t.Errorf("rank %d got %+v, rank 0 %+v", r, bufs[r], bufs[0])
		}
	}
	for r, tr := range ts {
		if err := tr.Free(bufs[r]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAllocOneRankFails: a rank whose heap cannot hold the allocation
// fails with its heap's error, the others with an *AllocMismatchError
// that says it failed, and nobody keeps a byte.
func TestAllocOneRankFails(t *testing.T) {
	const ranks = 2
	ts, cs := newOneSidedComms(t, ranks, 4<<20)
	fill, err := ts[1].Alloc(3<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := allocAll(cs, 2<<20)
	if !errors.Is(errs[1], heap.ErrNoSpace) {
		t.Errorf("rank 1: %v, want heap.ErrNoSpace", errs[1])
	}
	var ae *collective.AllocMismatchError
	if !errors.As(errs[0], &ae) || !ae.Failed || ae.Rank != 1 {
		t.Errorf("rank 0: %v, want an *AllocMismatchError saying rank 1 failed", errs[0])
	}
	if got := ts[0].Heap().InUse(); got != 0 {
		t.Errorf("rank 0: %d bytes in use after the failed Alloc", got)
	}
	if got := ts[1].Heap().InUse(); got != fill.Len {
		t.Errorf("rank 1: %d bytes in use, want its own %d", got, fill.Len)
	}
}
