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

// TestBroadcastScatter: broadcasts from BcastScatterMin bytes (scatter
// and chain) deliver root's bytes to every rank, from every root, in
// worlds of 3 to 7 ranks, for lengths that split into n segments evenly
// and not, and just below the threshold (binomial tree).
func TestBroadcastScatter(t *testing.T) {
	min := collective.BcastScatterMin
	for _, n := range []int{3, 4, 5, 7} {
		cs := newComms(t, n, collective.Options{})
		for _, size := range []int{min - 1, min, min + 13, 2*min + 7} {
			for _, root := range collRoots(n) {
				t.Run(fmt.Sprintf("n=%d/size=%d/root=%d", n, size, root), func(t *testing.T) {
					collRun(t, n, func(r int) error {
						data := make([]byte, size)
						for i := range data {
							data[i] = 0xee
							if r == root {
								data[i] = byte(i*7 + root*13 + i>>8)
							}
						}
						if err := cs[r].BroadcastBytes(context.Background(), root, data); err != nil {
							return err
						}
						for i, got := range data {
							if want := byte(i*7 + root*13 + i>>8); got != want {
								return fmt.Errorf("rank %d byte %d: got %#x, want %#x", r, i, got, want)
							}
						}
						return nil
					})
				})
			}
		}
	}
}

// TestBroadcastScatterMismatch: when root's length differs from the
// others' in a scatter broadcast, every other rank fails, none waits.
func TestBroadcastScatterMismatch(t *testing.T) {
	const n = 5
	cs := newComms(t, n, collective.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, n)
	_ = onAll(n, func(r int) error {
		data := make([]byte, 4*collective.BcastScatterMin)
		if r == 2 {
			data = data[:len(data)-100]
		}
		errs[r] = cs[r].BroadcastBytes(ctx, 2, data)
		return nil
	})
	for r, err := range errs {
		if r == 2 {
			continue
		}
		if !errors.Is(err, collective.ErrLengthMismatch) && !errors.Is(err, engine.ErrTruncated) && !errors.Is(err, collective.ErrAbandoned) {
			t.Errorf("rank %d: got %v, want a length mismatch or an abandon", r, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank %d waited for the deadline", r)
		}
	}
}

// TestBroadcastScatterMinOption: Options.BcastScatterMin moves the
// threshold; at 1 byte even broadcasts shorter than the world (empty
// segments) and of 0 bytes go by scatter and chain, and still deliver.
func TestBroadcastScatterMinOption(t *testing.T) {
	for _, min := range []int{1, -1} {
		const n = 5
		cs := newComms(t, n, collective.Options{BcastScatterMin: min})
		for _, size := range []int{0, 1, 3, 5, 6, 1000} {
			collRun(t, n, func(r int) error {
				data := make([]byte, size)
				for i := range data {
					if r == 3 {
						data[i] = byte(i + 1)
					}
				}
				if err := cs[r].BroadcastBytes(context.Background(), 3, data); err != nil {
					return err
				}
				for i, got := range data {
					if got != byte(i+1) {
						return fmt.Errorf("min %d, size %d: rank %d byte %d: got %d", min, size, r, i, got)
					}
				}
				return nil
			})
		}
	}
}
