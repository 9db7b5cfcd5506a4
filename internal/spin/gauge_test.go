package spin

import (
	"testing"
	"time"
)

// TestSpinGauge: waits spin the full budget until most recent ones
// outlast it (11 long waits in a row from none), then Floor, and the
// full budget again after 3 short ones; a budget at or below Floor is
// never cut.
func TestSpinGauge(t *testing.T) {
	const full = time.Millisecond
	var g Gauge
	for i := 1; i <= 11; i++ {
		if got := g.Budget(full); got != full {
			t.Fatalf("after %d long waits: budget %v, want %v", i-1, got, full)
		}
		g.Note(true)
	}
	if got := g.Budget(full); got != Floor {
		t.Fatalf("after 11 long waits: budget %v, want Floor", got)
	}
	if got := g.Budget(Floor / 2); got != Floor/2 {
		t.Errorf("budget of a spin under the floor: %v, want it unchanged", got)
	}
	for range 50 {
		g.Note(true)
	}
	if v := g.long.Load(); v > gaugeOne {
		t.Errorf("gauge %d after only long waits, above %d", v, gaugeOne)
	}
	for i := 1; i <= 3; i++ {
		if got := g.Budget(full); got != Floor {
			t.Fatalf("after %d short waits: budget %v, want Floor still", i-1, got)
		}
		g.Note(false)
	}
	if got := g.Budget(full); got != full {
		t.Fatalf("after 3 short waits: budget %v, want %v", got, full)
	}
	g.Slept(Floor, time.Now().Add(-2*full), full) // spun and slept longer than full
	g.Slept(Floor, time.Now(), full)              // slept briefly: short
	v := g.long.Load()
	if v == 0 || v > gaugeHigh {
		t.Errorf("gauge %d after a long and a short sleep", v)
	}
	g.Slept(0, time.Now().Add(-time.Second), -1) // no spinning: nothing to learn
	if got := g.long.Load(); got != v {
		t.Errorf("a sleep with spinning off moved the gauge from %d to %d", v, got)
	}
}
