package collective_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestRootedConcurrent: a Gather or Scatter root takes every rank's
// segment at once, not one rank after another. Rank 1 enters the call
// only once rank 2 has finished it; each segment is 2 MiB, past the eager
// limit, so it moves only once the root takes it. A root that took rank 1
// first (as it did) never took rank 2's, and the call waited until the
// root's ctx ended. Every byte is checked.
func TestRootedConcurrent(t *testing.T) {
	const n, elems = 3, 512 << 10
	cs := newComms(t, n, collective.Options{})
	counts := []int{elems, elems, elems}
	value := func(r, i int) float32 { return float32(r*1000 + i%997) }
	for _, op := range []string{"Gather", "Scatter"} {
		t.Run(op, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			twoDone := make(chan struct{})
			err := onAll(n, func(r int) error {
				if r == 1 {
					select {
					case <-twoDone:
					case <-ctx.Done():
						return fmt.Errorf("rank 2 never finished its %s: %w", op, ctx.Err())
					}
				}
				if r == 2 {
					defer close(twoDone)
				}
				seg := make([]float32, elems)
				whole := make([]float32, n*elems)
				if op == "Gather" {
					for i := range seg {
						seg[i] = value(r, i)
					}
					if err := cs[r].GatherBytes(ctx, 0, collective.Float32, collective.AsBytes(seg), collective.AsBytes(whole), counts); err != nil {
						return err
					}
					if r != 0 {
						return nil
					}
					for i, v := range whole {
						if want := value(i/elems, i%elems); v != want {
							return fmt.Errorf("root: element %d is %v, want %v", i, v, want)
						}
					}
					return nil
				}
				if r == 0 {
					for i := range whole {
						whole[i] = value(i/elems, i%elems)
					}
				}
				if err := cs[r].ScatterBytes(ctx, 0, collective.Float32, collective.AsBytes(whole), collective.AsBytes(seg), counts); err != nil {
					return err
				}
				for i, v := range seg {
					if want := value(r, i); v != want {
						return fmt.Errorf("rank %d: element %d is %v, want %v", r, i, v, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
