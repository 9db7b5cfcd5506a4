package engine_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// TestCrowdedAcrossHosts: ranks of different hosts (HostID overrides, as
// network namespaces of one kernel have) learn from each other's HELLO
// that they share this machine and count each other as ranks on its
// cores: 2 such ranks wait as crowded ones do on a machine of 1 core,
// not on one of 2; an explicit Options.Spin is kept; and the crowded
// ranks still meet in barriers and exchanges.
func TestCrowdedAcrossHosts(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("1 core: 2 loopback ranks are crowded already by their addresses")
	}
	ts := meshHosts(t, []string{"a", "b"}, engine.Options{})
	for r, tr := range ts {
		if !engine.SameMachine(tr, 1-r) {
			t.Errorf("rank %d: rank %d's HELLO did not name this machine", r, 1-r)
		}
		if c, _ := engine.Crowded(tr); c {
			t.Errorf("rank %d: crowded with 2 ranks on %d cores", r, runtime.NumCPU())
		}
		engine.SettleCrowdingOn(tr, 2)
		if c, _ := engine.Crowded(tr); c {
			t.Errorf("rank %d: crowded with 2 ranks on 2 cores", r)
		}
		engine.SettleCrowdingOn(tr, 1)
		if c, spin := engine.Crowded(tr); !c || runtime.GOOS == "linux" && spin != 200*time.Microsecond {
			t.Errorf("rank %d: 2 ranks on 1 core: crowded %v, spin %v", r, c, spin)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, tr := range ts {
		wg.Go(func() {
			for range 50 {
				if errs[r] = tr.Barrier(); errs[r] != nil {
					return
				}
				if errs[r] = exchange(tr, 1, 2, 64<<10); errs[r] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d, crowded: %v", r, err)
		}
	}

	spun := meshHosts(t, []string{"a", "b"}, engine.Options{Spin: 50 * time.Microsecond})
	engine.SettleCrowdingOn(spun[0], 1)
	if c, spin := engine.Crowded(spun[0]); c || spin != 50*time.Microsecond {
		t.Errorf("explicit Spin: crowded %v, spin %v; want it kept", c, spin)
	}
}
