package train

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestDeadlineStraggler: with a deadline, a rank that sleeps far past it
// before every allreduce is left out of the steps, the others go on and
// learn, and at every check all ranks hold the same weights again.
func TestDeadlineStraggler(t *testing.T) {
	trainSet, testSet := loadMNIST(t)
	trainSet, testSet = trainSet.Head(1024), testSet.Head(500)
	const n = 3
	ts := meshtest.Mesh(t, n, engine.Options{})
	eps := make([][]Epoch, n)
	params := make([][]float32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := Config{Batch: 48, Seed: 3, CheckEvery: 5, Deadline: time.Millisecond}
			if r == 2 {
				cfg.Straggle = 100 * time.Millisecond
			}
			tr, err := New(ts[r], trainSet, testSet, cfg)
			if err != nil {
				errs[r] = err
				return
			}
			defer tr.Close()
			eps[r], errs[r] = tr.Run(nil)
			params[r] = slices.Clone(tr.Params())
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := 1; r < n; r++ {
		if !slices.Equal(params[0], params[r]) {
			t.Errorf("rank %d's weights differ from rank 0's after the last check", r)
		}
	}
	late, root := eps[2][0], eps[0][0]
	t.Logf("root contributed %d/%d, straggler %d/%d (%d resyncs); accuracy %.3f / %.3f",
		root.Contributed, root.Steps, late.Contributed, late.Steps, late.Resyncs, root.TestAccuracy, late.TestAccuracy)
	if root.Contributed != root.Steps {
		t.Errorf("the root contributed to %d of %d steps", root.Contributed, root.Steps)
	}
	if late.Contributed >= late.Steps {
		t.Errorf("the straggler contributed to all %d steps", late.Steps)
	}
	if late.TestAccuracy != root.TestAccuracy {
		t.Errorf("accuracy: straggler %v, root %v", late.TestAccuracy, root.TestAccuracy)
	}
	if root.TestAccuracy < 0.5 {
		t.Errorf("accuracy %.3f: the on-time ranks did not learn", root.TestAccuracy)
	}
}

// TestResyncTakesRootWeights: a rank that fell behind a deadline round
// (its weights missed an update) takes rank 0's weights at the check, and
// the check then passes.
func TestResyncTakesRootWeights(t *testing.T) {
	trainSet, testSet := loadMNIST(t)
	ts := meshtest.Mesh(t, 2, engine.Options{})
	trs := make([]*Trainer, 2)
	for r := range trs {
		tr, err := New(ts[r], trainSet.Head(128), testSet.Head(10), Config{Deadline: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		trs[r] = tr
	}
	trs[1].Params()[7] += 1
	trs[1].behind = true
	resynced := make([]bool, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, tr := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resynced[r], errs[r] = tr.verify(1)
		}()
	}
	wg.Wait()
	for r := range trs {
		if errs[r] != nil || !resynced[r] {
			t.Errorf("rank %d: resynced %v, %v", r, resynced[r], errs[r])
		}
	}
	if !slices.Equal(trs[0].Params(), trs[1].Params()) {
		t.Error("the weights differ after the resync")
	}
}
