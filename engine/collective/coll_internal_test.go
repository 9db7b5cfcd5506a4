package collective

import (
	"context"
	"errors"
	"math"
	"runtime/pprof"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/engine"
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

// starFake is a Transport that says it is a star; only the algorithm
// choice is exercised.
type starFake struct{ Transport }

func (starFake) Topology() engine.Topology {
	return engine.Topology{Star: true, Center: 0, Loopback: true}
}

// TestStarAlgorithmChoice: Auto picks the star algorithm on a star of
// more than two ranks, and only there; AlgorithmStar elsewhere is an error.
func TestStarAlgorithmChoice(t *testing.T) {
	c := newComm(starFake{}, nil, Options{})
	for _, tc := range []struct {
		n, size int
		want    Algorithm
	}{{4, 8, AlgorithmStar}, {3, 16 << 20, AlgorithmStar}, {2, 8, AlgorithmDoubling}} {
		if got, err := c.allReduceAlgo(tc.n, tc.size); err != nil || got != tc.want {
			t.Errorf("n=%d size=%d: %v %v, want %v", tc.n, tc.size, got, err, tc.want)
		}
	}
	mesh := newComm(nil, nil, Options{Algorithm: AlgorithmStar})
	if _, err := mesh.allReduceAlgo(4, 8); !errors.Is(err, ErrAlgorithm) {
		t.Errorf("AlgorithmStar on a mesh: %v, want ErrAlgorithm", err)
	}
}

// TestCallNumbersSkipZero: call numbers go round from 2^32-1 to 1, since
// 0 means no call (calls.go), and each call's first tag is the one
// its number names, ((k-1) mod 65536) * tagsPerCall.
func TestCallNumbersSkipZero(t *testing.T) {
	c := &Comm{seq: math.MaxUint32 - 1}
	for _, want := range []struct {
		seq, base uint32
	}{{math.MaxUint32, 65534 * tagsPerCall}, {1, 0}, {2, tagsPerCall}} {
		base := c.begin(kindAllReduce, Float32, Sum)
		c.mu.Unlock()
		if c.seq != want.seq || base != want.base {
			t.Fatalf("call %d with first tag %d, want call %d with %d", c.seq, base, want.seq, want.base)
		}
	}
}

// TestSharedCallNumbersSkipZero: the call numbers that Comms over one
// transport share (calls.next) go round from 2^32-1 to 1 too.
func TestSharedCallNumbersSkipZero(t *testing.T) {
	cs := &calls{seq: math.MaxUint32 - 1}
	for _, want := range []uint32{math.MaxUint32, 1, 2} {
		got := cs.next()
		cs.release()
		if got != want {
			t.Fatalf("call %d, want %d", got, want)
		}
	}
}

// TestRingMinDefault: by default the ring starts at 64 KiB, at 512 KiB
// over a power of two from 4 ranks, and with 2 ranks at 2 pieces; a
// RingMin that is set applies at every world size.
func TestRingMinDefault(t *testing.T) {
	def := newComm(nil, nil, Options{Chunk: LinkChunk})
	set := newComm(nil, nil, Options{Chunk: LinkChunk, RingMin: 1024})
	for _, tc := range []struct {
		c       *Comm
		n, size int
		want    bool
	}{
		{def, 3, 64 << 10, true}, {def, 3, 64<<10 - 4, false},
		{def, 4, 256 << 10, false}, {def, 4, 512 << 10, true},
		{def, 8, 512<<10 - 4, false}, {def, 16, 512 << 10, true},
		{def, 5, 64 << 10, true}, {def, 2, 64 << 10, false}, {def, 2, 2 * LinkChunk, true},
		{set, 4, 1024, true}, {set, 3, 1020, false}, {set, 2, 2*LinkChunk - 4, false},
	} {
		if got := tc.c.useRing(tc.n, tc.size); got != tc.want {
			t.Errorf("RingMin %d, %d ranks, %d bytes: ring %v, want %v", tc.c.opts.RingMin, tc.n, tc.size, got, tc.want)
		}
	}
}

// TestParseAlgorithm: every algorithm's name reads back as it, doubling
// too by its short name, and anything else is ErrAlgorithm.
func TestParseAlgorithm(t *testing.T) {
	for a := range algorithms {
		if got, err := ParseAlgorithm(a.String()); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if got, err := ParseAlgorithm("doubling"); err != nil || got != AlgorithmDoubling {
		t.Errorf("ParseAlgorithm(doubling) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "rings", "Algorithm(9)"} {
		if _, err := ParseAlgorithm(bad); !errors.Is(err, ErrAlgorithm) {
			t.Errorf("ParseAlgorithm(%q): %v, want ErrAlgorithm", bad, err)
		}
	}
}

// TestHalvingChoice: Auto gives Rabenseifner's algorithm the sizes from
// HalvingMin up to RingMin in worlds of 4 ranks or more that span
// machines, and keeps recursive doubling over loopback and below.
func TestHalvingChoice(t *testing.T) {
	for _, tc := range []struct {
		links bool
		n     int
		size  int
		want  Algorithm
	}{
		{true, 4, HalvingMin, AlgorithmHalving},
		{true, 8, PowerOfTwoRingMin - 4, AlgorithmHalving},
		{true, 8, HalvingMin - 4, AlgorithmDoubling},
		{true, 8, PowerOfTwoRingMin, AlgorithmRing},
		{true, 3, 64 << 10, AlgorithmRing},       // RingMin 64 KiB off powers of two
		{true, 3, HalvingMin, AlgorithmDoubling}, // halving needs 4 ranks
		{false, 8, HalvingMin, AlgorithmDoubling},
		{true, 2, HalvingMin, AlgorithmDoubling},
	} {
		c := newComm(nil, nil, Options{})
		c.links = tc.links
		if got, err := c.allReduceAlgo(tc.n, tc.size); err != nil || got != tc.want {
			t.Errorf("links %v, n=%d, %d bytes: %v %v, want %v", tc.links, tc.n, tc.size, got, err, tc.want)
		}
	}
	// Options.HalvingMin moves the threshold, or (negative) removes it.
	for _, tc := range []struct {
		min, size int
		want      Algorithm
	}{
		{8 << 10, 8 << 10, AlgorithmHalving},
		{8 << 10, 8<<10 - 4, AlgorithmDoubling},
		{-1, PowerOfTwoRingMin - 4, AlgorithmDoubling},
	} {
		c := newComm(nil, nil, Options{HalvingMin: tc.min})
		c.links = true
		if got, err := c.allReduceAlgo(8, tc.size); err != nil || got != tc.want {
			t.Errorf("HalvingMin %d, %d bytes: %v %v, want %v", tc.min, tc.size, got, err, tc.want)
		}
	}
}

// TestLabelsOverCallers: a call's labels go over those of the ctx it was
// given, made once per ctx: the same ctx again allocates nothing, and a
// ctx without labels takes the call's own set.
func TestLabelsOverCallers(t *testing.T) {
	var lc labelCache
	call := collLabels(kindGather, 4096)
	if got := lc.over(context.Background(), call); got != call {
		t.Error("a ctx without labels did not take the call's own set")
	}
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("phase", "forward"))
	m := lc.over(ctx, call)
	for k, want := range map[string]string{"phase": "forward", "op": "gather", "algorithm": "linear"} {
		if v, _ := pprof.Label(m, k); v != want {
			t.Errorf("label %s = %q, want %q", k, v, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() {
		if lc.over(ctx, call) != m || lc.over(context.Background(), call) != call {
			panic("labels changed")
		}
	}); a != 0 {
		t.Errorf("labelling over the same ctx allocates %v times", a)
	}
	other := pprof.WithLabels(context.Background(), pprof.Labels("phase", "backward"))
	if v, _ := pprof.Label(lc.over(other, call), "phase"); v != "backward" {
		t.Errorf("over another ctx: phase = %q", v)
	}
}
