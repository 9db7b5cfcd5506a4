package bench_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/rpc"
)

// TestRPCSuiteLeavesTransport: the rpc suite runs on both impls, twice on
// the same transports, and leaves them able to take an agent of the
// application's whose calls to every rank work: no handler left installed,
// no goodbye from the run's agents held for the next one.
func TestRPCSuiteLeavesTransport(t *testing.T) {
	const n = 3
	cfg := bench.Config{Suites: []string{"rpc"}, Sizes: []int{0, 8, 64 << 10}, Plan: bench.Plan{Iters: 20, Warmup: 3}}
	rep, errs := runRanksThen(t, n, cfg, func(r int, tr *engine.NetTransport) error {
		run := &bench.Runner{T: tr}
		if _, err := run.Run(cfg); err != nil {
			return fmt.Errorf("second run: %w", err)
		}
		echo := func(_ context.Context, args []byte) ([]byte, error) { return args, nil }
		a, err := rpc.NewAgent(tr, rpc.Options{Handlers: map[string]rpc.Handler{"echo": echo}})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for to := range n {
			if got, err := a.Call(ctx, to, "echo", []byte{byte(r)}); err != nil || len(got) != 1 || got[0] != byte(r) {
				err = errors.Join(err, a.Close(ctx))
				return fmt.Errorf("call to rank %d after the runs: %q, %v", to, got, err)
			}
		}
		return errors.Join(tr.Barrier(), a.Close(ctx))
	})
	noErrors(t, errs)
	if rep == nil {
		t.Fatal("no report on rank 0")
	}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2*3 {
		t.Fatalf("%d results, want 6", len(rep.Results))
	}
	for _, x := range rep.Results {
		if x.Suite != "rpc" || x.Op != "call" || x.Iters != 20 || x.Error != "" {
			t.Errorf("result %+v", x)
		}
	}
}
