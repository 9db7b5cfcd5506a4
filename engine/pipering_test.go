package engine_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// TestDefaultPipeRing: 1 MiB rings up to 17 ranks, halving as the
// world doubles past it, never under 64 KiB.
func TestDefaultPipeRing(t *testing.T) {
	for _, c := range []struct{ world, ring int }{
		{1, 1 << 20}, {2, 1 << 20}, {16, 1 << 20}, {17, 1 << 20}, {18, 512 << 10}, {32, 512 << 10}, {33, 512 << 10},
		{34, 256 << 10}, {65, 256 << 10}, {66, 128 << 10}, {129, 128 << 10}, {130, 64 << 10}, {4096, 64 << 10},
	} {
		if got := engine.DefaultPipeRing(c.world); got != c.ring {
			t.Errorf("DefaultPipeRing(%d) = %d, want %d", c.world, got, c.ring)
		}
	}
}

// TestPipeRingChosen: a pair's pipes get DefaultPipeRing of the world
// (512 KiB for 18 ranks, 1 MiB for 2) unless Options.PipeRing names one.
func TestPipeRingChosen(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		opts  engine.Options
		ring  int
	}{
		{"world 2", []string{"", ""}, engine.Options{}, 1 << 20},
		{"world 2, 64 KiB", []string{"", ""}, engine.Options{PipeRing: 64 << 10}, 64 << 10},
		{"world 18", []string{"a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"}, engine.Options{}, 512 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := meshHosts(t, c.hosts, c.opts)
			for r := range 2 {
				if got := engine.PipeRingOf(ts[r], 1-r); got != c.ring {
					t.Errorf("rank %d: ring %d with rank %d, want %d", r, got, 1-r, c.ring)
				}
			}
			if len(ts) > 2 {
				if got := engine.PipeRingOf(ts[0], 2); got != 0 {
					t.Errorf("rank 0: ring %d with rank 2 of another host, want none", got)
				}
			}
		})
	}
}
