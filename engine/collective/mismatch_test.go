package collective_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestCallMismatch: ranks that call a collective with different element
// types or reductions, or call different collectives, get a
// *MismatchError naming both calls instead of a silently wrong result.
func TestCallMismatch(t *testing.T) {
	cs := newComms(t, 2, collective.Options{RingMin: 1 << 10})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		name string
		call func(r int) error
		want string // in rank 1's error: rank 0's call
	}{
		{"dtype", func(r int) error {
			dt := []collective.DType{collective.Float32, collective.Int32}[r]
			return cs[r].AllReduceBytes(ctx, dt, make([]byte, 64), collective.Sum)
		}, "allreduce of float32 with sum"},
		{"dtype/ring", func(r int) error {
			dt := []collective.DType{collective.Float64, collective.Int64}[r]
			return cs[r].AllReduceBytes(ctx, dt, make([]byte, 64<<10), collective.Sum)
		}, "allreduce of float64 with sum"},
		{"op", func(r int) error {
			op := []collective.Op{collective.Max, collective.Min}[r]
			return collective.AllReduce(cs[r], make([]float32, 16), op)
		}, "allreduce of float32 with max"},
		{"collective", func(r int) error {
			if r == 0 {
				return collective.AllGather(cs[0], make([]int32, 4), make([]int32, 8), []int{4, 4})
			}
			return collective.AllReduce(cs[1], make([]int32, 4), collective.Sum)
		}, "allgather of int32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, 2)
			_ = onAll(2, func(r int) error { errs[r] = tc.call(r); return nil })
			for r, err := range errs {
				var me *collective.MismatchError
				if !errors.As(err, &me) || !errors.Is(err, collective.ErrMismatch) {
					t.Fatalf("rank %d: got %v, want a *MismatchError", r, err)
				}
				if me.Rank != 1-r {
					t.Errorf("rank %d: mismatch blamed on rank %d", r, me.Rank)
				}
				if r == 1 && !strings.Contains(err.Error(), tc.want) {
					t.Errorf("rank 1: %q does not name rank 0's call %q", err, tc.want)
				}
			}
		})
	}
	t.Run("length across RingMin", func(t *testing.T) {
		// One rank takes the ring, the other recursive doubling.
		err := onAll(2, func(r int) error {
			return collective.AllReduce(cs[r], make([]float32, 100+1000*r), collective.Sum)
		})
		if !errors.Is(err, collective.ErrLengthMismatch) {
			t.Fatalf("got %v, want ErrLengthMismatch", err)
		}
	})
	// The Comms stay usable: a matching call afterwards succeeds.
	err := onAll(2, func(r int) error {
		data := []float32{float32(r + 1)}
		if err := collective.AllReduce(cs[r], data, collective.Sum); err != nil {
			return err
		}
		if data[0] != 3 {
			t.Errorf("rank %d: got %v, want 3", r, data[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAllReduceLengthsDiffer: an allreduce whose ranks pass different
// lengths (10 against 20 elements, and sizes that take the ring) fails on
// every rank of 2 with an error wrapping both ErrMismatch and
// ErrLengthMismatch, whichever rank holds the shorter buffer; with 4
// ranks, a rank that received no message of the wrong length fails with
// ErrAbandoned instead. Every rank's next call works.
func TestAllReduceLengthsDiffer(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, lens := range [][2]int{{10, 20}, {20, 10}, {100_000, 200_000}, {1 << 18, 1<<18 + 4}} {
			t.Run(fmt.Sprintf("n=%d/%d-%d", n, lens[0], lens[1]), func(t *testing.T) {
				cs := newComms(t, n, collective.Options{})
				errs := callAll(t, cs, func(ctx context.Context, r int) error {
					l := lens[0]
					if r == 1 {
						l = lens[1]
					}
					return cs[r].AllReduceBytes(ctx, collective.Float32, make([]byte, 4*l), collective.Sum)
				})
				found := 0
				for r, err := range errs {
					switch {
					case errors.Is(err, collective.ErrMismatch) && errors.Is(err, collective.ErrLengthMismatch):
						found++
					case n > 2 && errors.Is(err, collective.ErrAbandoned):
					default:
						t.Errorf("rank %d: got %v, want ErrMismatch and ErrLengthMismatch", r, err)
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
