package spin

import (
	"sync"
	"testing"
	"time"
)

// gives records the times giveCore is called while the test runs.
func gives(t *testing.T) func() []time.Time {
	var mu sync.Mutex
	var at []time.Time
	t.Cleanup(SetGiveCoreHook(func() {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	}))
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}

// TestPacerGivesCore: a spin on a machine with a core per rank gives its
// core up only past its give (Options.SpinYield), and then once every
// Every at most; with no give, never.
func TestPacerGivesCore(t *testing.T) {
	got := gives(t)
	const give, budget = 40 * time.Microsecond, 400 * time.Microsecond
	for _, sy := range []time.Duration{0, give} {
		before := len(got())
		var p Pacer
		p.Start(budget, sy, false, false)
		start := time.Now()
		for p.Pause(false) {
		}
		at := got()[before:]
		if sy == 0 {
			if len(at) != 0 {
				t.Errorf("no give: the core was given up %d times", len(at))
			}
			continue
		}
		if len(at) == 0 {
			t.Fatalf("give %v: a %v spin never gave its core up", sy, budget)
		}
		if d := at[0].Sub(start); d < give {
			t.Errorf("give %v: the core was first given up %v into the spin", sy, d)
		}
		if most := int((budget-give)/Every) + 1; len(at) > most {
			t.Errorf("give %v: a %v spin gave its core up %d times, more than once every %v (%d)", sy, budget, len(at), Every, most)
		}
	}
}

// TestYieldCadence: a spin on sockets yields at every 8th poll from the
// first, so that within a TCP wait of some 10-15 polls a goroutine of this
// process waiting for the spinner's P gets to run; one on pipes, whose
// small messages come within a microsecond or two, only every Every.
// Before, sockets waited for Every too, which put the TCP ping-pong's
// mean up 15-25% and its p99 20-40% in one process (bench/RESULTS.md,
// 2026-12-04 21:00).
func TestYieldCadence(t *testing.T) {
	for _, tc := range []struct {
		cheap       bool
		el, yielded time.Duration
		want        bool
	}{
		{false, 0, 0, true},
		{false, time.Microsecond, 0, true},
		{true, 0, 0, false},
		{true, Every - 1, 0, false},
		{true, Every, 0, true},
		{true, 2*Every - 1, Every, false},
	} {
		if got := yieldDue(tc.cheap, tc.el, tc.yielded); got != tc.want {
			t.Errorf("yieldDue(cheap %v, %v, %v) = %v, want %v", tc.cheap, tc.el, tc.yielded, got, tc.want)
		}
	}
}
