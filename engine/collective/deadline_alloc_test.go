package collective_test

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/racedetect"
)

// TestAllReduceDeadlineSteadyStateAllocs: once warm, a deadline allreduce
// allocates nothing, on the root or on the leaf (AllocsPerRun counts
// the whole process's allocations, the leaf's goroutine's too). The root
// used to allocate two contexts with their timers per call.
func TestAllReduceDeadlineSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("the race detector allocates")
	}
	ts := meshtest.Mesh(t, 2, engine.Options{})
	cs := make([]*collective.Comm, 2)
	for r := range cs {
		c, err := collective.New(ts[r], collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cs[r] = c
	}
	const runs = 200
	done := make(chan error, 1)
	go func() {
		d := make([]float32, 1000)
		for range runs + 1 + 3 {
			if _, err := collective.AllReduceDeadline(cs[1], d, collective.Sum, time.Now().Add(time.Minute)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	d := make([]float32, 1000)
	for range 3 {
		if _, err := collective.AllReduceDeadline(cs[0], d, collective.Sum, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	allocs := testing.AllocsPerRun(runs, func() {
		if err == nil {
			_, err = collective.AllReduceDeadline(cs[0], d, collective.Sum, time.Now().Add(time.Minute))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per deadline allreduce, want 0", allocs)
	}
}
