package collective

import (
	"runtime/pprof"
	"testing"
)

// TestOneSidedLabels: the one-sided allreduce is labelled "onesided", and
// the two-sided ones keep their names.
func TestOneSidedLabels(t *testing.T) {
	c := &Comm{}
	for a, name := range map[Algorithm]string{AlgorithmOneSided: "onesided", AlgorithmRing: "ring", AlgorithmDoubling: "recursive-doubling"} {
		ctx := c.labels(a, 5<<20)
		for k, v := range map[string]string{"op": "allreduce", "algorithm": name, "size": "<16MiB"} {
			if got, ok := pprof.Label(ctx, k); !ok || got != v {
				t.Errorf("%v: label %s = %q, want %q", a, k, got, v)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { c.labels(AlgorithmOneSided, 4096) }); a != 0 {
		t.Errorf("labelling allocates %v times", a)
	}
}

// TestOneSidedLayout: the area holds n slots of a header and the largest
// block, cache-line aligned.
func TestOneSidedLayout(t *testing.T) {
	for _, tc := range []struct {
		n, elems, esz int
		stride, need  uint64
	}{
		{2, 0, 4, 64, 128},
		{3, 1, 8, 128, 3 * 128},
		{4, 7, 4, 128, 4 * 128},
		{2, 1 << 20, 4, 64 + 2<<20, 2 * (64 + 2<<20)},
		{3, 100001, 4, 64 + 133376, 3 * (64 + 133376)},
	} {
		stride, need := osLayout(tc.n, tc.elems, tc.esz)
		if stride != tc.stride || need != tc.need || stride%osAlign != 0 {
			t.Errorf("osLayout(%d, %d, %d) = %d, %d, want %d, %d", tc.n, tc.elems, tc.esz, stride, need, tc.stride, tc.need)
		}
	}
}
