package engine

import (
	"sync"
	"testing"
	"time"
)

// gives records the times giveCore is called while the test runs.
func gives(t *testing.T) func() []time.Time {
	var mu sync.Mutex
	var at []time.Time
	testHookGiveCore = func() {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	}
	t.Cleanup(func() { testHookGiveCore = nil })
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}

// TestSpinPauseGivesCore: a mailbox wait's spin on a machine with a core
// per rank gives its core up only past Options.SpinYield, and then once
// every spinYield at most; with SpinYield unset, never.
func TestSpinPauseGivesCore(t *testing.T) {
	got := gives(t)
	const give, budget = 40 * time.Microsecond, 400 * time.Microsecond
	for _, sy := range []time.Duration{0, give} {
		tr := newNetTransport(0, 2, Options{SpinYield: sy})
		before := len(got())
		var c spinClock
		start := time.Now()
		for tr.spinPause(&c, budget) {
		}
		at := got()[before:]
		if sy == 0 {
			if len(at) != 0 {
				t.Errorf("SpinYield unset: the core was given up %d times", len(at))
			}
			continue
		}
		if len(at) == 0 {
			t.Fatalf("SpinYield %v: a %v spin never gave its core up", sy, budget)
		}
		if d := at[0].Sub(start); d < give {
			t.Errorf("SpinYield %v: the core was first given up %v into the spin", sy, d)
		}
		if most := int((budget-give)/spinYield) + 1; len(at) > most {
			t.Errorf("SpinYield %v: a %v spin gave its core up %d times, more than once every %v (%d)", sy, budget, len(at), spinYield, most)
		}
	}
}
