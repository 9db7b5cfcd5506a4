package bench_test

import (
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// runRanks runs cfg on an in-process mesh of n ranks (goroutines) and
// returns rank 0's report and every rank's error.
func runRanks(t *testing.T, n int, cfg bench.Config) (*bench.Report, []error) {
	t.Helper()
	return runRanksThen(t, n, cfg, nil)
}

// runRanksThen is runRanks, with each rank calling then (if set) on its
// transport after a successful run, before closing it; then's error is
// the rank's.
func runRanksThen(t *testing.T, n int, cfg bench.Config, then func(r int, tr *engine.NetTransport) error) (*bench.Report, []error) {
	t.Helper()
	return runRanksKeyed(t, n, cfg, nil, then)
}

// runRanksKeyed is runRanksThen with key as the mesh key of the boltmesh
// mesh and of the baseline (nil: none).
func runRanksKeyed(t *testing.T, n int, cfg bench.Config, key []byte, then func(r int, tr *engine.NetTransport) error) (*bench.Report, []error) {
	t.Helper()
	lns, addrs := meshtest.Listeners(t, n)
	errs := make([]error, n)
	var rep *bench.Report
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			tr, err := engine.FromListener(r, n, lns[r], addrs, engine.Options{HeapSize: 4 << 20, MeshKey: key})
			if err != nil {
				errs[r] = err
				return
			}
			defer tr.Close()
			run := &bench.Runner{T: tr, MeshKey: key}
			rp, err := run.Run(cfg)
			if err == nil && then != nil {
				err = then(r, tr)
			}
			errs[r] = err
			if r == 0 {
				rep = rp
			}
		})
	}
	wg.Wait()
	return rep, errs
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
