package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestDeadlineFirstLeafStopsHalfway: in a deadline allreduce of 4 ranks
// whose contributions go by rendezvous, rank 1 (the first leaf the root
// takes) stops partway through sending its contribution, its link to the
// root stalled. Ranks 2 and 3 send theirs on time, and they are in: the
// root had posted their receives beside rank 1's, so their bytes came
// while it waited for rank 1. (When the root received from one leaf after
// another, it waited for rank 1 until the deadline and its bytes until
// the grace after it, and then took ranks 2 and 3 with no time left for
// their bytes: every on-time leaf after a stopped one was left out.) Once
// rank 1's link moves again, rank 1 gets the round's result without
// itself, and the next round has every rank.
func TestDeadlineFirstLeafStopsHalfway(t *testing.T) {
	const n, elems = 4, 4 << 20 // 16 MiB of float32: past the eager limit
	ts, faults := faultyMesh(t, n, engine.Options{Streams: 1})
	cs := make([]*collective.Comm, n)
	for r := range n {
		var err error
		if cs[r], err = collective.New(ts[r], collective.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// The root's data stream from rank 1: the RTS and 256 KiB of DATA, then
	// nothing.
	faults[faultKey{0, 1, 0}].StallAfter(256 << 10)
	value := func(r, round, i int) float32 { return float32(r + 1 + round + i%5) }
	round := func(k int, deadline time.Time, ranks []int) ([]collective.Contributors, error) {
		got := make([]collective.Contributors, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for _, r := range ranks {
			wg.Go(func() {
				data := make([]float32, elems)
				for i := range data {
					data[i] = value(r, k, i)
				}
				got[r], errs[r] = collective.AllReduceDeadline(cs[r], data, collective.Sum, deadline)
				if errs[r] != nil {
					return
				}
				for i, v := range data {
					var want float32
					for p := range n {
						if got[r].Has(p) {
							want += value(p, k, i)
						}
					}
					if v != want {
						errs[r] = fmt.Errorf("element %d is %v, want %v for contributors %#x", i, v, want, got[r].Mask)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, r := range ranks {
			if errs[r] != nil {
				return got, fmt.Errorf("round %d, rank %d: %w", k, r, errs[r])
			}
		}
		return got, nil
	}

	// Round 0: rank 1 runs apart, as it cannot finish before its link moves.
	deadline := time.Now().Add(time.Second)
	var one collective.Contributors
	var oneErr error
	oneDone := make(chan struct{})
	go func() {
		defer close(oneDone)
		data := make([]float32, elems)
		one, oneErr = collective.AllReduceDeadline(cs[1], data, collective.Sum, deadline)
	}()
	got, err := round(0, deadline, []int{0, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{0, 2, 3} {
		if want := uint64(1<<0 | 1<<2 | 1<<3); got[r].Mask != want {
			t.Errorf("round 0, rank %d: contributors %#x, want %#x (every on-time leaf)", r, got[r].Mask, want)
		}
	}
	faults[faultKey{0, 1, 0}].Stall(false)
	select {
	case <-oneDone:
	case <-time.After(30 * time.Second):
		t.Fatal("rank 1's round did not end once its link moved again")
	}
	if oneErr != nil || one.Has(1) || one.Mask != got[0].Mask {
		t.Fatalf("round 0, rank 1: contributors %#x, %v; want the root's %#x, without rank 1", one.Mask, oneErr, got[0].Mask)
	}

	got, err = round(1, time.Now().Add(30*time.Second), []int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Count != n {
		t.Fatalf("round 1: contributors %#x, want every rank", got[0].Mask)
	}
}
