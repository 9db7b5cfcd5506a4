package engine_test

import (
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

func TestMeshAllPairsInProcess(t *testing.T) {
	const ranks, tags, msgs, max = 4, 3, 8, 8 << 20
	ts := newMesh(t, ranks, engine.Options{})
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for r, tr := range ts {
		wg.Go(func() { errs[r] = exchange(tr, tags, msgs, max) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	barrierAll(t, ts)
}

// barrierAll runs one barrier on every rank and fails on any error.
func barrierAll(t *testing.T, ts []*engine.NetTransport) {
	t.Helper()
	errc := make(chan error, len(ts))
	for _, tr := range ts {
		go func() { errc <- tr.Barrier() }()
	}
	for range ts {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
