package collective_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestMismatchReachesEveryRank: with more than 2 ranks, a mismatch is
// found only by the ranks that receive an odd message; the others, waiting
// for a part that will never come, fail too (ErrAbandoned) instead of
// waiting until their ctx ends, and every rank's next call works.
func TestMismatchReachesEveryRank(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		for _, odd := range []int{0, 1, n - 1} {
			t.Run(fmt.Sprintf("n=%d/odd=%d", n, odd), func(t *testing.T) {
				cs := newComms(t, n, collective.Options{})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				start := time.Now()
				errs := make([]error, n)
				_ = onAll(n, func(r int) error {
					dt := collective.Float32
					if r == odd {
						dt = collective.Int32
					}
					errs[r] = cs[r].AllReduceBytes(ctx, dt, make([]byte, 64), collective.Sum)
					return nil
				})
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("the ranks took %v to fail", d)
				}
				found := 0
				for r, err := range errs {
					var ae *engine.CollAbandonError
					switch {
					case errors.Is(err, collective.ErrMismatch):
						found++
					case errors.As(err, &ae) && errors.Is(err, collective.ErrAbandoned):
						if ae.Rank == r || ae.Rank < 0 || ae.Rank >= n {
							t.Errorf("rank %d: abandoned by rank %d", r, ae.Rank)
						}
					default:
						t.Errorf("rank %d: got %v, want ErrMismatch or ErrAbandoned", r, err)
					}
				}
				if found == 0 {
					t.Error("no rank found the mismatch")
				}
				// The Comms are usable again: a matching call succeeds.
				if err := onAll(n, func(r int) error {
					v := []float32{float32(r), 1}
					if err := collective.AllReduce(cs[r], v, collective.Sum); err != nil {
						return err
					}
					if want := float32(n * (n - 1) / 2); v[0] != want || v[1] != float32(n) {
						return fmt.Errorf("rank %d: %v, want [%v %v]", r, v, want, n)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
