package bench_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

func TestSummarize(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Microsecond // 100..1 µs, unsorted
	}
	s := bench.Summarize(lat)
	if s.N != 100 || s.P50 != 50*time.Microsecond || s.P90 != 90*time.Microsecond || s.P99 != 99*time.Microsecond || s.Max != 100*time.Microsecond {
		t.Fatalf("%+v", s)
	}
	if s.Mean != 50500*time.Nanosecond || s.Total != 5050*time.Microsecond {
		t.Fatalf("mean %v total %v", s.Mean, s.Total)
	}
	if one := bench.Summarize([]time.Duration{7}); one.P50 != 7 || one.P99 != 7 || one.Max != 7 {
		t.Fatalf("one sample: %+v", one)
	}
}

func TestBandwidth(t *testing.T) {
	if got := bench.GBps(1e9, 1e6); got != 1 {
		t.Errorf("1e9 bytes in 1 s: %v GB/s", got)
	}
	for n, want := range map[int]float64{1: 0, 2: 1, 4: 1.5, 8: 1.75} {
		if got := bench.AllReduceBusFactor(n); math.Abs(got-want) > 1e-12 {
			t.Errorf("bus factor for %d ranks: %v, want %v", n, got, want)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := bench.ParseSizes("8, 1K,64KiB,1M,16MB,1G,0")
	want := []int{8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 1 << 30, 0}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "-1", "1Q", "1.5M", "2T"} {
		if _, err := bench.ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) succeeded", bad)
		}
	}
	for n, want := range map[int]string{8: "8B", 1024: "1KiB", 1536: "1.5KiB", 16 << 20: "16MiB"} {
		if got := bench.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := bench.Result{Suite: "p2p", Op: "pingpong", Impl: "boltmesh", Ranks: 2, Bytes: 1000, Iters: 10,
		P50: 10, P90: 11, P99: 12, Max: 13, Mean: 10, AlgBW: 0.1, BusBW: 0.1}
	rep := bench.Report{Schema: bench.Schema, Host: bench.ThisHost(), Results: []bench.Result{good}}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*bench.Report){
		"schema":     func(r *bench.Report) { r.Schema = "boltmesh-bench/v0" },
		"impl":       func(r *bench.Report) { r.Results[0].Impl = "mpi" },
		"zero p50":   func(r *bench.Report) { r.Results[0].P50 = 0 },
		"order":      func(r *bench.Report) { r.Results[0].P99 = 5 },
		"algbw":      func(r *bench.Report) { r.Results[0].AlgBW = 1 },
		"busbw":      func(r *bench.Report) { r.Results[0].BusBW = 0 },
		"no results": func(r *bench.Report) { r.Results = nil },
		"host":       func(r *bench.Report) { r.Host.CPUs = 0 },
	} {
		bad := rep
		bad.Results = slices.Clone(rep.Results)
		mutate(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "invalid report") {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}
