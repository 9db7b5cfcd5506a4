package train

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/racedetect"
)

// TestStepAllReduceAllocs: one step's communication (the gradient
// allreduce, plain or with a deadline) allocates nothing on either rank
// once warm.
func TestStepAllReduceAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("the race detector allocates")
	}
	trainSet, testSet := loadMNIST(t)
	for _, deadline := range []time.Duration{0, time.Minute} {
		ts := meshtest.Mesh(t, 2, engine.Options{})
		trs := make([]*Trainer, 2)
		for r := range trs {
			tr, err := New(ts[r], trainSet.Head(128), testSet.Head(10), Config{Deadline: deadline})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tr.Close)
			trs[r] = tr
		}
		const runs = 50
		done := make(chan error, 1)
		go func() {
			for range runs + 1 + 3 {
				if _, err := trs[1].allReduce(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for range 3 {
			if _, err := trs[0].allReduce(); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		allocs := testing.AllocsPerRun(runs, func() {
			if err == nil {
				_, err = trs[0].allReduce()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if allocs != 0 {
			t.Errorf("deadline %v: %v allocations per step's allreduce", deadline, allocs)
		}
	}
}
