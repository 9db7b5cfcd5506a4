package collective_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestAllReduceDeadline: rank 2 of 4 sleeps past the deadline. The others
// finish in time with the sum and mean of the three that contributed, and
// know who they were; the late rank gets the same result and sees itself
// left out; the next round, with everyone on time, is exact.
func TestAllReduceDeadline(t *testing.T) {
	const n, length, late = 4, 1000, 2
	cs := newComms(t, n, collective.Options{})
	for _, op := range []collective.Op{collective.Sum, collective.Mean} {
		start := time.Now()
		deadline := start.Add(300 * time.Millisecond)
		finished := make([]time.Duration, n)
		err := onAll(n, func(r int) error {
			data := make([]float64, length)
			for i := range data {
				data[i] = contribution(r, i)
			}
			if r == late {
				time.Sleep(time.Until(deadline) + 400*time.Millisecond)
			}
			got, err := collective.AllReduceDeadline(cs[r], data, op, deadline)
			finished[r] = time.Since(start)
			if err != nil {
				return err
			}
			if got.Count != n-1 || got.Has(late) || !got.Has(0) || !got.Has(3) {
				return fmt.Errorf("rank %d: contributors %+v, want all but rank %d", r, got, late)
			}
			for i, v := range data {
				want := 0.0
				for p := range n {
					if p != late {
						want += contribution(p, i)
					}
				}
				if op == collective.Mean {
					want /= n - 1
				}
				if v != want {
					return fmt.Errorf("rank %d %v element %d: got %v want %v", r, op, i, v, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for r, d := range finished {
			if r != late && d > time.Until(deadline)+300*time.Millisecond+2*time.Second {
				t.Errorf("rank %d finished %v after the start: not in time", r, d)
			}
		}
		// Everyone on time: the late contribution of the last round must not
		// leak into this one.
		err = onAll(n, func(r int) error {
			data := make([]float64, length)
			for i := range data {
				data[i] = contribution(r, i)
			}
			got, err := collective.AllReduceDeadline(cs[r], data, collective.Sum, time.Now().Add(5*time.Second))
			if err != nil {
				return err
			}
			if got.Count != n {
				return fmt.Errorf("rank %d: %d contributors, want %d", r, got.Count, n)
			}
			for i, v := range data {
				if want := reference(collective.Sum, n, i); v != want {
					return fmt.Errorf("rank %d element %d: got %v want %v", r, i, v, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllReduceDeadlineErrors(t *testing.T) {
	cs := newComms(t, 2, collective.Options{Root: 5})
	_, err := collective.AllReduceDeadline(cs[0], make([]float32, 3), collective.Sum, time.Now())
	if err == nil {
		t.Fatal("a root outside the world was accepted")
	}
	if _, err := cs[0].AllReduceDeadlineBytes(t.Context(), collective.Float32, make([]byte, 5), collective.Sum, time.Now()); !errors.Is(err, collective.ErrDTypeLength) {
		t.Fatalf("got %v, want ErrDTypeLength", err)
	}
}

// TestDeadlineRootFailureReachesEveryRank: the other ranks of a deadline
// allreduce wait for the root's result, so a root that fails (here a
// leaf's contribution of the wrong length, or the root's own refused
// arguments) abandons the call, and they fail with ErrAbandoned at once
// instead of waiting until their ctx ends; the next call works.
func TestDeadlineRootFailureReachesEveryRank(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name    string
		rootErr error
		size    func(r int) int // bytes of rank r's data
	}{
		{"leaf length", collective.ErrLengthMismatch, func(r int) int { return 16 + 16*(r/2) }},
		{"root arguments", collective.ErrDTypeLength, func(r int) int { return 16 - 3*(1-min(r, 1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newComms(t, n, collective.Options{})
			errs := callAll(t, cs, func(ctx context.Context, r int) error {
				_, err := cs[r].AllReduceDeadlineBytes(ctx, collective.Float32, make([]byte, tc.size(r)), collective.Sum, time.Now().Add(5*time.Second))
				return err
			})
			if !errors.Is(errs[0], tc.rootErr) {
				t.Errorf("root: got %v, want %v", errs[0], tc.rootErr)
			}
			for r, err := range errs[1:] {
				if !errors.Is(err, collective.ErrAbandoned) {
					t.Errorf("rank %d: got %v, want ErrAbandoned", r+1, err)
				}
			}
			checkNextCall(t, cs)
		})
	}
}

// TestAllReduceDeadlineGatherMax: the root's receives posted ahead, one
// buffer per leaf received from at once, reused as each leaf's
// contribution is reduced: with room for one leaf (a negative GatherMax),
// for two of four, and for all (the default), contributions past the eager
// limit, every rank gets the exact sum, in rank order, every round.
func TestAllReduceDeadlineGatherMax(t *testing.T) {
	const n, elems = 5, 512 << 10 // 2 MiB of float32
	for _, gm := range []int{-1, 2 * 4 * elems, 0} {
		t.Run(fmt.Sprintf("GatherMax=%d", gm), func(t *testing.T) {
			cs := newComms(t, n, collective.Options{GatherMax: gm})
			for k := range 3 {
				err := onAll(n, func(r int) error {
					data := make([]float32, elems)
					for i := range data {
						data[i] = float32(r*3 + k + i%11)
					}
					got, err := collective.AllReduceDeadline(cs[r], data, collective.Sum, time.Now().Add(30*time.Second))
					if err != nil {
						return err
					}
					if got.Count != n {
						return fmt.Errorf("round %d, rank %d: contributors %#x, want every rank", k, r, got.Mask)
					}
					for i, v := range data {
						var want float32
						for p := range n {
							want += float32(p*3 + k + i%11)
						}
						if v != want {
							return fmt.Errorf("round %d, rank %d, element %d: %v, want %v", k, r, i, v, want)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
