package collective

import (
	"context"
	"runtime/pprof"
	"testing"
	"unsafe"
)

func TestCollLabels(t *testing.T) {
	ctx := collLabels(kindAllToAll, 5<<20)
	want := map[string]string{"op": "alltoall", "algorithm": "pairwise", "size": "<16MiB"}
	for k, v := range want {
		if got, ok := pprof.Label(ctx, k); !ok || got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if collLabels(kindBroadcast, 0) != collLabels(kindBroadcast, 1023) {
		t.Error("labels of one size class differ")
	}
	if a := testing.AllocsPerRun(100, func() { pprof.SetGoroutineLabels(collLabels(kindGather, 4096)) }); a != 0 {
		t.Errorf("labelling allocates %v times", a)
	}
	pprof.SetGoroutineLabels(context.Background())
}

// TestCollScratchAligned: scratch is 8-byte aligned whatever sizes came
// before (a 0- or 7-byte scratch once left a misaligned buffer behind).
func TestCollScratchAligned(t *testing.T) {
	c := &Comm{}
	for _, n := range []int{0, 1, 3, 6, 7, 4, 17, 4096, 2} {
		b := c.collScratch(n)
		if len(b) != n {
			t.Fatalf("collScratch(%d): len %d", n, len(b))
		}
		if n > 0 && uintptrOf(b)%8 != 0 {
			t.Fatalf("collScratch(%d) at %#x, not 8-aligned", n, uintptrOf(b))
		}
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
