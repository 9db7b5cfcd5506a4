package rpc_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/rpc"
)

// TestStarCallsEveryPair runs agents over a 4-rank star: every rank calls
// every other one (worker to worker through the coordinator) concurrently,
// and each answer comes from the rank called, with the arguments intact,
// those between workers long enough to be relayed in parts.
func TestStarCallsEveryPair(t *testing.T) {
	const n = 4
	ts := meshtest.Star(t, n, engine.Options{})
	as := make([]*rpc.Agent, n)
	for r, tr := range ts {
		a, err := rpc.NewAgent(tr, rpc.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		serveStd(t, a)
		as[r] = a
	}
	t.Cleanup(func() { closeAll(t, as) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n*n)
	for from := range n {
		for to := range n {
			wg.Go(func() {
				size := 1000 * (from + 1)
				if from != 0 && to != 0 {
					size += 300 << 10 // longer than engine.RelayPart: relayed in parts, both ways
				}
				args := bytes.Repeat([]byte{byte(from*n + to)}, size)
				got, err := as[from].Call(ctx, to, "echo", args)
				if err == nil && !bytes.Equal(got, args) {
					err = fmt.Errorf("echo returned %d bytes, want %d", len(got), len(args))
				}
				if err == nil {
					got, err = as[from].Call(ctx, to, "whoami", nil)
					if err == nil && (len(got) != 1 || int(got[0]) != to) {
						err = fmt.Errorf("whoami answered %v", got)
					}
				}
				if err != nil {
					errs <- fmt.Errorf("%d -> %d: %w", from, to, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
