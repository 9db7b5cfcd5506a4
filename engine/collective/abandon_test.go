package collective_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/plumb"
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
				errs := callAll(t, cs, func(ctx context.Context, r int) error {
					dt := collective.Float32
					if r == odd {
						dt = collective.Int32
					}
					return cs[r].AllReduceBytes(ctx, dt, make([]byte, 64), collective.Sum)
				})
				found := 0
				for r, err := range errs {
					var ae *plumb.CollAbandonError
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
				checkNextCall(t, cs)
			})
		}
	}
}

// TestRefusedArgsReachEveryRank: a rank whose arguments are refused before
// the call begins (here a length that is no whole number of elements, or
// a root outside the world) fails with that error, the others fail with
// ErrAbandoned instead of waiting for it, and every rank's next call
// works: the refused call still took its number.
func TestRefusedArgsReachEveryRank(t *testing.T) {
	const n = 3
	calls := map[string]func(c *collective.Comm, ctx context.Context, bad bool) error{
		"allreduce": func(c *collective.Comm, ctx context.Context, bad bool) error {
			data := make([]byte, 64)
			if bad {
				data = data[:63]
			}
			return c.AllReduceBytes(ctx, collective.Float32, data, collective.Sum)
		},
		"broadcast": func(c *collective.Comm, ctx context.Context, bad bool) error {
			root := 0
			if bad {
				root = n
			}
			return c.BroadcastBytes(ctx, root, make([]byte, 64))
		},
	}
	for name, call := range calls {
		for _, odd := range []int{0, n - 1} {
			t.Run(fmt.Sprintf("%s/odd=%d", name, odd), func(t *testing.T) {
				cs := newComms(t, n, collective.Options{})
				errs := callAll(t, cs, func(ctx context.Context, r int) error {
					return call(cs[r], ctx, r == odd)
				})
				for r, err := range errs {
					switch {
					case r == odd && err != nil && !errors.Is(err, collective.ErrAbandoned):
					case r != odd && errors.Is(err, collective.ErrAbandoned):
					case r != odd && err == nil && name == "broadcast":
						// a rank that needs nothing from the odd one may finish
					default:
						t.Errorf("rank %d (odd %d): got %v", r, odd, err)
					}
				}
				checkNextCall(t, cs)
			})
		}
	}
}

// checkNextCall checks that the Comms are usable again after a failed
// call: a matching allreduce succeeds on every rank within 20 s.
func checkNextCall(t *testing.T, cs []*collective.Comm) {
	t.Helper()
	n := len(cs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := onAll(n, func(r int) error {
		v := []float32{float32(r), 1}
		if err := cs[r].AllReduceBytes(ctx, collective.Float32, collective.AsBytes(v), collective.Sum); err != nil {
			return fmt.Errorf("rank %d: the next call: %w", r, err)
		}
		if want := float32(n * (n - 1) / 2); v[0] != want || v[1] != float32(n) {
			return fmt.Errorf("rank %d: %v, want [%v %v]", r, v, want, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// callAll runs call on every rank of cs at once, each with a ctx of 20 s,
// and returns their errors; it fails t if they took over 10 s to return.
func callAll(t *testing.T, cs []*collective.Comm, call func(ctx context.Context, r int) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	errs := make([]error, len(cs))
	_ = onAll(len(cs), func(r int) error {
		errs[r] = call(ctx, r)
		return nil
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the ranks took %v to return", d)
	}
	return errs
}

// TestLengthMismatchReachesEveryRank: with more than 2 ranks, a rank whose
// length differs from the others' makes some ranks find the mismatch (a
// message of the wrong length, longer or shorter than expected); the rest
// fail too instead of waiting, and every rank's next call works.
func TestLengthMismatchReachesEveryRank(t *testing.T) {
	const n = 3
	for _, size := range []int{64, 1 << 20} {
		for _, delta := range []int{-4, 4} {
			for _, odd := range []int{0, n - 1} {
				t.Run(fmt.Sprintf("size=%d/delta=%d/odd=%d", size, delta, odd), func(t *testing.T) {
					cs := newComms(t, n, collective.Options{})
					errs := callAll(t, cs, func(ctx context.Context, r int) error {
						b := size
						if r == odd {
							b += delta
						}
						return cs[r].AllReduceBytes(ctx, collective.Float32, make([]byte, b), collective.Sum)
					})
					for r, err := range errs {
						if !errors.Is(err, collective.ErrLengthMismatch) && !errors.Is(err, collective.ErrMismatch) &&
							!errors.Is(err, collective.ErrAbandoned) && !errors.Is(err, engine.ErrTruncated) {
							t.Errorf("rank %d: got %v, want a mismatch or ErrAbandoned", r, err)
						}
					}
					checkNextCall(t, cs)
				})
			}
		}
	}
}

// TestCanceledRankReachesEveryRank: a rank whose ctx ends leaves the call
// and abandons it, so the ranks waiting for its part fail with
// ErrAbandoned rather than wait on (here for their own, longer ctx).
func TestCanceledRankReachesEveryRank(t *testing.T) {
	const n = 3
	for _, size := range []int{64, 1 << 20} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			cs := newComms(t, n, collective.Options{})
			canceled, cancel := context.WithCancel(context.Background())
			cancel()
			errs := callAll(t, cs, func(ctx context.Context, r int) error {
				if r == 1 {
					ctx = canceled
				}
				return cs[r].AllReduceBytes(ctx, collective.Float32, make([]byte, size), collective.Sum)
			})
			for r, err := range errs {
				if want := collective.ErrAbandoned; r == 1 && !errors.Is(err, context.Canceled) || r != 1 && !errors.Is(err, want) {
					t.Errorf("rank %d: got %v", r, err)
				}
			}
			checkNextCall(t, cs)
		})
	}
}
