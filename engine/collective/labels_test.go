package collective_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// TestLabelsRestored: every collective gives its goroutine back the
// profile labels it had, in the generic forms (no ctx), and in the Bytes
// forms given a ctx without labels or with labels other than the
// goroutine's. Before, a call set the goroutine's labels to its ctx's as
// it returned: a caller's labels set by pprof.SetGoroutineLabels (or by a
// pprof.Do whose ctx it did not pass) were lost, and the generic forms
// left the goroutine unlabelled.
func TestLabelsRestored(t *testing.T) {
	const n = 2
	ts := meshtest.Mesh(t, n, engine.Options{})
	cs := make([]*collective.Comm, n)
	for r, tr := range ts {
		c, err := collective.New(tr, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs[r] = c
	}
	labelled := pprof.WithLabels(context.Background(), pprof.Labels("ctx-label", "given"))
	ctxs := map[string]context.Context{"no labels": context.Background(), "other labels": labelled}
	counts := []int{4, 4}
	calls := map[string]func(c *collective.Comm, ctx context.Context) error{
		"AllReduce": func(c *collective.Comm, _ context.Context) error {
			return collective.AllReduce(c, make([]float32, 8), collective.Sum)
		},
		"Broadcast": func(c *collective.Comm, _ context.Context) error {
			return collective.Broadcast(c, 0, make([]int32, 8))
		},
		"AllReduceBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.AllReduceBytes(ctx, collective.Float32, make([]byte, 32), collective.Sum)
		},
		"BroadcastBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.BroadcastBytes(ctx, 0, make([]byte, 32))
		},
		"ReduceToBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.ReduceToBytes(ctx, 0, collective.Int32, make([]byte, 32), collective.Sum)
		},
		"AllGatherBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.AllGatherBytes(ctx, collective.Int32, make([]byte, 16), make([]byte, 32), counts)
		},
		"ReduceScatterBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.ReduceScatterBytes(ctx, collective.Int32, make([]byte, 32), counts, collective.Sum)
		},
		"GatherBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.GatherBytes(ctx, 0, collective.Int32, make([]byte, 16), make([]byte, 32), counts)
		},
		"ScatterBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.ScatterBytes(ctx, 0, collective.Int32, make([]byte, 32), make([]byte, 16), counts)
		},
		"AllToAllBytes": func(c *collective.Comm, ctx context.Context) error {
			return c.AllToAllBytes(ctx, collective.Int32, make([]byte, 32), []int{4, 4}, make([]byte, 32), []int{4, 4})
		},
	}
	for name, call := range calls {
		for cname, ctx := range ctxs {
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r := range n {
				wg.Go(func() {
					mine := pprof.WithLabels(context.Background(), pprof.Labels("rank", fmt.Sprint(r)))
					pprof.SetGoroutineLabels(mine)
					want := proflabel.Save()
					if errs[r] = call(cs[r], ctx); errs[r] == nil && proflabel.Save() != want {
						errs[r] = fmt.Errorf("the goroutine's labels changed")
					}
				})
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Errorf("%s, ctx with %s, rank %d: %v", name, cname, r, err)
				}
			}
		}
	}
}
