package bench_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
)

// brokenSuite's op reports a data-check failure on rank 1 in its third
// timed iteration, and keeps going.
func init() {
	bench.Register(&bench.Suite{
		Name:     "test-broken",
		Sizes:    []int{8},
		MinRanks: 2,
		Ops:      []bench.Op{{Name: "broken", Start: func(c *bench.Case) (bench.Body, error) { return brokenBody{c.EP.Rank()}, nil }}},
	})
}

type brokenBody struct{ rank int }

func (b brokenBody) Iter(i int) error {
	if b.rank == 1 && i == 2 {
		return &bench.CheckError{Rank: 1, Msg: "byte 3 is 0x00, want 0x2a"}
	}
	return nil
}

func (b brokenBody) Finish(int) error { return nil }

func TestCheckFailureFailsTheRun(t *testing.T) {
	cfg := bench.Config{Suites: []string{"test-broken", "allreduce"}, Sizes: []int{8}, Plan: bench.Plan{Iters: 5, Warmup: 1}}
	rep, errs := runRanks(t, 2, cfg)
	for r, err := range errs {
		if !errors.Is(err, bench.ErrCheck) {
			t.Errorf("rank %d: %v, want an ErrCheck", r, err)
		}
	}
	if rep == nil {
		t.Fatal("rank 0 returned no report")
	}
	failed := rep.Failed()
	if len(failed) != 2 || failed[0].Error == "" || failed[0].Op != "broken" {
		t.Fatalf("failed results: %+v", failed)
	}
	if len(rep.Results) != 4 { // the run went on: allreduce on both impls
		t.Errorf("%d results, want 4", len(rep.Results))
	}
}
