package engine_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/racedetect"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestSteadyStateAllocs proves that a Send + RecvInto pair allocates
// nothing once warm, for a small and a large message. The send runs on a
// long-lived goroutine (a large send blocks until the receiver reads), so
// that the measured function creates no goroutine itself.
func TestSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts mean nothing under the race detector: it makes sync.Pool drop items")
	}
	if testing.Short() {
		t.Skip("allocation counts need full runs")
	}
	for _, link := range meshtest.Links {
		t.Run(link.Name, func(t *testing.T) { steadyStateAllocs(t, link.Opts) })
	}
}

func steadyStateAllocs(t *testing.T, opts engine.Options) {
	ts := newMesh(t, 2, opts)
	for _, size := range []int{4 << 10, 1 << 20} {
		msg := pattern(0, 1, 2, 0, size)
		buf := make([]byte, size)
		kick := make(chan struct{})
		sent := make(chan error)
		go func() {
			for range kick {
				sent <- ts[0].Send(1, 2, msg)
			}
		}()
		pair := func() {
			kick <- struct{}{}
			n, err := ts[1].RecvInto(0, 2, buf)
			if err == nil {
				err = <-sent
			}
			if err != nil || n != size {
				t.Fatalf("size %d: n=%d err=%v", size, n, err)
			}
		}
		for range 200 {
			pair()
		}
		if err := check(buf, 0, 1, 2, 0, size); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(500, pair)
		close(kick)
		if allocs != 0 {
			t.Errorf("size %d: %v allocations per Send+RecvInto, want 0", size, allocs)
		}
	}
}
