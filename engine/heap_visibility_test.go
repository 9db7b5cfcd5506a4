package engine_test

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// visTag stamps the patterns of the visibility tests.
const visTag = 0x5115

// visibilityRounds runs iters rounds in which rank a puts a fresh pattern
// into rank b's heap without Quiet, every rank calls Barrier, and then
// rank c must Get it from b and b must see it in its own heap. roles picks
// the three ranks of round i.
func visibilityRounds(t *testing.T, ts []*engine.NetTransport, iters int, roles func(i int) (a, b, c int)) {
	t.Helper()
	const bufSize = 1 << 20
	bufs := make([]engine.SymmetricBuffer, len(ts))
	for r, tr := range ts {
		var err error
		if bufs[r], err = tr.Alloc(bufSize, 0); err != nil {
			t.Fatal(err)
		}
		if bufs[r] != bufs[0].On(r) {
			t.Fatalf("rank %d got %+v, rank 0 %+v", r, bufs[r], bufs[0])
		}
	}
	got := make([]byte, bufSize)
	for i := range iters {
		a, b, c := roles(i)
		n, off := 1<<10+i%5<<10, i*4093%(bufSize-8<<10)
		if i%10 == 9 {
			n, off = bufSize, 0
		}
		dst := bufs[b]
		dst.Offset, dst.Len = dst.Offset+uint64(off), uint64(n)
		if err := ts[a].Put(dst, pattern(a, b, visTag, i, n)); err != nil {
			t.Fatalf("round %d: rank %d put to rank %d: %v", i, a, b, err)
		}
		barrierAll(t, ts)
		if err := ts[c].Get(dst, got[:n]); err != nil {
			t.Fatalf("round %d: rank %d get from rank %d: %v", i, c, b, err)
		}
		if err := check(got[:n], a, b, visTag, i, n); err != nil {
			t.Fatalf("round %d: rank %d's get after the barrier: %v", i, c, err)
		}
		view, err := ts[b].Bytes(bufs[b])
		if err != nil {
			t.Fatal(err)
		}
		if err := check(view[off:off+n], a, b, visTag, i, n); err != nil {
			t.Fatalf("round %d: rank %d's own view after the barrier: %v", i, b, err)
		}
	}
}

func TestHeapBarrierVisibility(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{HeapSize: 4 << 20})
	watchdog(t, 15*time.Second, ts...)
	visibilityRounds(t, ts, 200, func(int) (int, int, int) { return 0, 1, 2 })
}

func TestHeapBarrierVisibilityRotating(t *testing.T) {
	ts := newMesh(t, 4, engine.Options{HeapSize: 4 << 20})
	watchdog(t, 15*time.Second, ts...)
	visibilityRounds(t, ts, 200, func(i int) (int, int, int) {
		a := i % 4
		b := (a + 1 + i/4%3) % 4 // every other rank in turn
		c := (b + 1) % 4
		if c == a {
			c = (c + 1) % 4
		}
		return a, b, c
	})
}
