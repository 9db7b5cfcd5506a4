package train

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestCallersComm: a trainer runs beside the caller's own Comm over the
// same transport, whose calls (a metric's allreduce after every step, from
// Progress) interleave with the training's: with the trainer's own Comm
// (New) and on the caller's (NewOn). Each ends with the weights of a run
// without the caller's calls, bit for bit, and the caller's allreduces
// are right; NewOn's trainer leaves the caller's Comm open. Before Comms
// over one transport shared their sequence of calls, the caller's and the
// trainer's calls took the same tags and failed.
func TestCallersComm(t *testing.T) {
	cfg := smallConfig()
	cfg.Epochs = 1
	_, want := runRanks(t, 2, cfg, 512, 256)
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("NewOn=%v", on), func(t *testing.T) {
			ts := meshtest.Mesh(t, 2, engine.Options{})
			trainSet, testSet := loadMNIST(t)
			trainSet, testSet = trainSet.Head(512), testSet.Head(256)
			params, errs := make([][]float32, 2), make([]error, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				wg.Go(func() { params[r], errs[r] = callersCommRank(ts[r], on, trainSet, testSet, cfg) })
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for r := range 2 {
				if !slices.Equal(params[r], want[r]) {
					t.Errorf("rank %d's weights differ from a run without the caller's calls", r)
				}
			}
		})
	}
}

// callersCommRank is one rank of TestCallersComm.
func callersCommRank(tr *engine.NetTransport, on bool, trainSet, testSet *Dataset, cfg Config) ([]float32, error) {
	mine, err := collective.New(tr, collective.Options{Algorithm: collective.AlgorithmRing})
	if err != nil {
		return nil, err
	}
	defer mine.Close()
	var metricErr error
	cfg.Progress = func(done, _ int) {
		v := []float64{float64(tr.Rank() + done)}
		if err := collective.AllReduce(mine, v, collective.Sum); err != nil || v[0] != float64(1+2*done) {
			metricErr = fmt.Errorf("the caller's allreduce after step %d: %v, %v", done, v, err)
		}
	}
	var trainer *Trainer
	if on {
		trainer, err = NewOn(mine, trainSet, testSet, cfg)
	} else {
		trainer, err = New(tr, trainSet, testSet, cfg)
	}
	if err != nil {
		return nil, err
	}
	_, err = trainer.Run(nil)
	trainer.Close()
	if err == nil {
		err = metricErr
	}
	if err != nil {
		return nil, err
	}
	v := []int32{1}
	if err := collective.AllReduce(mine, v, collective.Sum); err != nil || v[0] != 2 {
		return nil, fmt.Errorf("the caller's Comm after the trainer closed: %v, %v", v, err)
	}
	return slices.Clone(trainer.Params()), nil
}
