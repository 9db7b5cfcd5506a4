package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestStarBarrier: a star's barrier (a gather and a release at the
// coordinator) lets no rank out before the last one is in, barrier after
// barrier, whichever rank comes last.
func TestStarBarrier(t *testing.T) {
	const n, rounds = 5, 8
	ts := meshtest.Star(t, n, engine.Options{})
	var mu sync.Mutex
	entered := make([]time.Time, n)
	runRanks(t, n, func(r int) error {
		for i := range rounds {
			if r == i%n {
				time.Sleep(20 * time.Millisecond) // the last in, this time
			}
			mu.Lock()
			entered[r] = time.Now()
			mu.Unlock()
			if err := ts[r].Barrier(); err != nil {
				return err
			}
			left := time.Now()
			mu.Lock()
			last := entered[i%n]
			mu.Unlock()
			if left.Before(last) {
				return fmt.Errorf("barrier %d: rank %d left at %v, before rank %d entered at %v", i, r, left, i%n, last)
			}
			if err := ts[r].Barrier(); err != nil { // so that no rank enters the next before all left this one
				return err
			}
		}
		return nil
	})
}

// TestStarBarrierContext: ranks of a star that give up a barrier (the
// coordinator, a worker, both) resume it with their next call, so that
// every rank's barriers stay in step.
func TestStarBarrierContext(t *testing.T) {
	for _, c := range []struct {
		name   string
		gaveUp []int
	}{
		{"coordinator", []int{0}},
		{"worker", []int{2}},
		{"coordinator-and-worker", []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) { barrierGiveUpResume(t, meshtest.Star(t, 4, engine.Options{}), c.gaveUp) })
	}
}
