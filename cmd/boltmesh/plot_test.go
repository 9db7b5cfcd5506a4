package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
)

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{8: "8 B", 1024: "1 KiB", 64 << 10: "64 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 1536 << 10: "1.5 MiB"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPlots: the charts of a report say the op once with the ranks and
// the transport, mark the sizes as 8 B ... 16 MiB, and carry p50 and p99
// for both implementations.
func TestPlots(t *testing.T) {
	rep := &bench.Report{Schema: "boltmesh-bench/v1"}
	for _, impl := range []string{bench.ImplBoltmesh, bench.ImplStdnet} {
		for _, n := range []int64{8, 64 << 10, 16 << 20} {
			rep.Results = append(rep.Results,
				bench.Result{Suite: "allreduce", Op: "allreduce", Impl: impl, Ranks: 4, Bytes: n, P50: float64(n)/1e3 + 1, P99: float64(n)/1e3 + 5, BusBW: 1, Transport: "shm"},
				bench.Result{Suite: "p2p", Op: "pingpong", Impl: impl, Ranks: 2, Bytes: n, P50: 2, P99: 9, BusBW: 2, Transport: "shm"})
		}
	}
	rep.Results = append(rep.Results, bench.Result{Suite: "barrier", Op: "barrier", Impl: bench.ImplBoltmesh, Ranks: 4, P50: 3, P99: 4})
	dir := t.TempDir()
	if err := writePlots(dir, rep); err != nil {
		t.Fatal(err)
	}
	for file, title := range map[string]string{
		"allreduce-allreduce-latency.svg":   "allreduce · 4 ranks · shm: latency (p50 solid, p99 dashed)",
		"allreduce-allreduce-bandwidth.svg": "allreduce · 4 ranks · shm: bandwidth",
		"p2p-pingpong-latency.svg":          "pingpong · 2 ranks · shm: latency (p50 solid, p99 dashed)",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		svg := string(b)
		if !strings.Contains(svg, title) {
			t.Errorf("%s: no title %q", file, title)
		}
		for _, s := range []string{"8 B", "64 KiB", "16 MiB"} {
			if !strings.Contains(svg, ">"+s+"<") {
				t.Errorf("%s: no size label %q", file, s)
			}
		}
		if strings.Contains(svg, "e+0") {
			t.Errorf("%s: a raw size in exponent form", file)
		}
		if strings.HasSuffix(file, "latency.svg") {
			for _, l := range []string{"boltmesh p50", "boltmesh p99", "stdnet p50", "stdnet p99"} {
				if !strings.Contains(svg, ">"+l+"<") {
					t.Errorf("%s: no series %q", file, l)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "barrier-barrier-latency.svg")); !os.IsNotExist(err) {
		t.Errorf("a one-size op was charted: %v", err)
	}
}
