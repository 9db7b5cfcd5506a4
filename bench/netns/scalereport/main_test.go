package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

func TestRateGBps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{{"2gbit", 0.25}, {"500mbit", 0.0625}, {"400Mbit", 0.05}, {"1tbit", 125}, {"1gbps", 1}} {
		got, err := rateGBps(tc.in)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("rateGBps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "fast", "0gbit", "-1mbit", "gbit"} {
		if _, err := rateGBps(bad); err == nil {
			t.Errorf("rateGBps(%q) took it", bad)
		}
	}
}

// TestReport: two runs' bench reports and OpenMPI figures become one
// document (busbw over the link computed), a table with the ratio, and
// both charts.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, n := range []int{2, 4} {
		rep := &bench.Report{Schema: bench.Schema, Host: bench.Host{OS: "linux", CPUs: 2, Go: "go", Time: time.Now()}}
		for _, sz := range []int64{8, 16 << 20} {
			mean := 50.0
			if sz > 8 {
				mean = float64(sz) / 100 // 100 bytes a µs: 0.1 GB/s
			}
			alg := float64(sz) / mean / 1e3
			rep.Results = append(rep.Results, bench.Result{Suite: "allreduce", Op: "allreduce", Impl: bench.ImplBoltmesh, Ranks: n, Bytes: sz, Iters: 5,
				P50: mean, P90: mean, P99: mean, Max: mean, Mean: mean, AlgBW: alg, BusBW: alg * 2 * float64(n-1) / float64(n)})
		}
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "bm"+string(rune('0'+n))+".json")
		if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		m := filepath.Join(dir, "mpi"+string(rune('0'+n))+".txt")
		if err := os.WriteFile(m, []byte("8 30.00 0.000 0.000\n16777216 1000.00 0.080 0.100\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files["bm"+string(rune('0'+n))], files["mpi"+string(rune('0'+n))] = f, m
	}
	out := filepath.Join(dir, "scale.json")
	plots := filepath.Join(dir, "plots")
	var table bytes.Buffer
	err := run([]string{"report",
		"--run", "hosts=2,rate=2gbit,cpu=50,cpu_bcast=40,cpu_mpi=30,boltmesh=" + files["bm2"] + ",openmpi=" + files["mpi2"],
		"--run", "hosts=4,rate=1gbit,cpu=60,cpu_bcast=40,cpu_mpi=30,boltmesh=" + files["bm4"] + ",openmpi=" + files["mpi4"],
		"--json", out, "--plot", plots}, &table)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "== 4 hosts, links of 1gbit (0.125 GB/s each way)") || !strings.Contains(table.String(), "1.50x") {
		t.Errorf("table:\n%s", table.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc Doc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != Schema || len(doc.Runs) != 2 || len(doc.Runs[1].Results) != 4 {
		t.Fatalf("document: %+v", doc)
	}
	if p, ok := doc.Runs[1].find("boltmesh", "allreduce", 16<<20); !ok || math.Abs(p.OfLink-0.15/0.125) > 1e-6 {
		t.Errorf("4 hosts, 16 MiB: %+v, want busbw over link %v", p, 0.15/0.125)
	}
	for _, f := range []string{"allreduce-busbw-of-link.svg", "allreduce-latency.svg"} {
		if b, err := os.ReadFile(filepath.Join(plots, f)); err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := run([]string{"report", "--run", "hosts=2,rate=fast"}, &table); err == nil {
		t.Error("a run with a bad rate was taken")
	}

	// Hosts of several ranks: 2 hosts of 2 are a world of 4.
	table.Reset()
	if err := run([]string{"report", "--run", "hosts=2,per_host=2,placement=alternate,rate=1gbit,boltmesh=" + files["bm4"]}, &table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "== 2 hosts of 2 ranks (alternate), links of 1gbit") {
		t.Errorf("table:\n%s", table.String())
	}
	for _, spec := range []string{
		"boltmesh=" + files["bm2"] + ",hosts=2,per_host=2,rate=1gbit", // 2 ranks, not 4
		"hosts=2,per_host=2,placement=scattered,rate=1gbit",
		"hosts=2,per_host=0,rate=1gbit",
	} {
		if err := run([]string{"report", "--run", spec}, &table); err == nil {
			t.Errorf("--run %s was taken", spec)
		}
	}
}
