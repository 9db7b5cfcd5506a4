package match

import "testing"

// TestTombsArrive: an RTS that comes takes out its own tombstones (a
// withdrawal may come twice) and those below it, whose RTSs will never
// come (ids grow on the wire), and leaves those above it. Before, a
// tombstone of an RTS never sent held its credit for good (FuzzPeer's
// seed "of an unknown send: a tombstone").
func TestTombsArrive(t *testing.T) {
	var ts Tombs
	for _, id := range []uint64{9, 3, 7, 7, 12, 5} {
		ts.Add(id)
	}
	cases := []struct {
		id         uint64
		stale, own int
		left       int
	}{
		{2, 0, 0, 6},
		{5, 1, 1, 4}, // 3 never came; 5 is this one
		{8, 2, 0, 2}, // both withdrawals of 7
		{9, 0, 1, 1},
		{20, 1, 0, 0},
	}
	for _, c := range cases {
		stale, own := ts.Arrive(c.id)
		if stale != c.stale || own != c.own || ts.Len() != c.left {
			t.Fatalf("RTS %d: stale %d own %d, %d left; want %d %d %d", c.id, stale, own, ts.Len(), c.stale, c.own, c.left)
		}
	}
}
