package engine

import (
	"testing"
	"time"
)

// TestLogLimiter: a burst of refusalBurst lines, then one per
// refusalEvery, each counting the lines left out before it; a quiet spell
// refills the burst.
func TestLogLimiter(t *testing.T) {
	var l logLimiter
	t0 := time.Unix(1000, 0)
	for i := range refusalBurst {
		if ok, left := l.allow(t0); !ok || left != 0 {
			t.Fatalf("line %d of the burst: allowed %v, left %d", i, ok, left)
		}
	}
	for i := range 100 {
		if ok, _ := l.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatalf("line %d after the burst allowed within the same interval", i)
		}
	}
	if ok, left := l.allow(t0.Add(refusalEvery)); !ok || left != 100 {
		t.Fatalf("one interval on: allowed %v, left %d, want true, 100", ok, left)
	}
	if ok, _ := l.allow(t0.Add(refusalEvery + time.Second)); ok {
		t.Fatal("a second line in the same interval allowed")
	}
	later := t0.Add(100 * refusalEvery)
	for i := range refusalBurst {
		ok, left := l.allow(later)
		if !ok || (i == 0) != (left == 1) {
			t.Fatalf("after a quiet spell, line %d: allowed %v, left %d", i, ok, left)
		}
	}
	if ok, _ := l.allow(later); ok {
		t.Fatal("the refilled burst is larger than refusalBurst")
	}
}
