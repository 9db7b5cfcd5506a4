package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// TestRecvSpinGivesCore: a receive that spins on its peer's link for a
// message that comes 2 ms later gives its core up with Options.SpinYield
// set, and never without.
func TestRecvSpinGivesCore(t *testing.T) {
	var mu sync.Mutex
	count := 0
	engine.SetGiveCoreHook(t, func() { mu.Lock(); count++; mu.Unlock() })
	got := func() int { mu.Lock(); defer mu.Unlock(); return count }
	for _, sy := range []time.Duration{0, 20 * time.Microsecond} {
		ts := newMesh(t, 2, engine.Options{SpinYield: sy, Spin: time.Second})
		before := got()
		go func() {
			time.Sleep(2 * time.Millisecond)
			ts[1].Send(0, 3, []byte("late"))
		}()
		buf := make([]byte, 8)
		if n, err := ts[0].RecvInto(1, 3, buf); err != nil || string(buf[:n]) != "late" {
			t.Fatalf("SpinYield %v: %q, %v", sy, buf[:n], err)
		}
		n := got() - before
		switch {
		case sy == 0 && n != 0:
			t.Errorf("SpinYield unset: the core was given up %d times", n)
		case sy > 0 && n == 0:
			t.Errorf("SpinYield %v: a 2 ms spin never gave its core up", sy)
		}
	}
}
