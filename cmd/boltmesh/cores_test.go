package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseAnchor(t *testing.T) {
	out := []byte("some mpirun warning\n8 0.55 0.014 0.014 0.97\n65536 29.12 2.251 2.251 54.07\n1024 5 0.1 0.1 4\n")
	got, err := parseAnchor(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[8] != (sample{0.55, 0.97}) || got[65536] != (sample{29.12, 54.07}) {
		t.Errorf("got %v: want 8 and 65536 (a p99 below its p50 is no figure)", got)
	}
	if _, err := parseAnchor([]byte("mpirun: not enough slots\n")); !errors.Is(err, errAnchorOutput) {
		t.Errorf("no figures: %v, want errAnchorOutput", err)
	}
}

// TestGlooAnchorCompiles: Gloo's anchor is valid Python, where python3
// is on the PATH (it runs only where torch is, which this test does not
// need).
func TestGlooAnchorCompiles(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on the PATH")
	}
	if out, err := exec.Command("python3", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", "../../bench/netns/gloo_allreduce.py").CombinedOutput(); err != nil {
		t.Fatalf("bench/netns/gloo_allreduce.py: %v: %s", err, out)
	}
}

func TestCoresFlags(t *testing.T) {
	f := coresFlags{ns: "2,4,16,4", sizes: "8,1K", media: "tcp", rounds: 1, duration: 1}
	if err := f.resolve(4); err != nil {
		t.Fatal(err)
	}
	if len(f.worlds) != 2 || f.worlds[0] != 2 || f.worlds[1] != 4 || len(f.skipped()) != 1 || f.skipped()[0] != 16 {
		t.Errorf("worlds %v, skipped %v: want [2 4], [16] on 4 cores", f.worlds, f.skipped())
	}
	g := coresFlags{ns: "2", sizes: "8", media: "shm", rounds: 1, duration: 1, algorithms: "ring, halving,ring"}
	if err := g.resolve(4); err != nil || !slices.Equal(g.algos, []string{"ring", "halving"}) {
		t.Errorf("--algorithms %q: %v, %v: want [ring halving]", g.algorithms, g.algos, err)
	}
	for _, bad := range []coresFlags{
		{ns: "1", sizes: "8", media: "shm", rounds: 1, duration: 1},
		{ns: "8", sizes: "8", media: "shm", rounds: 1, duration: 1},
		{ns: "2", sizes: "6", media: "shm", rounds: 1, duration: 1},
		{ns: "2", sizes: "8", media: "ib", rounds: 1, duration: 1},
		{ns: "2", sizes: "8", media: "shm", rounds: 0, duration: 1},
		{ns: "2", sizes: "8", media: "shm", rounds: 1, duration: 1, singleCopy: "0"},
		{ns: "2", sizes: "8", media: "shm", rounds: 1, duration: 1, pingpong: "8,x"},
		{ns: "2", sizes: "8", media: "shm", rounds: 1, duration: 1, algorithms: "star"},
		{ns: "2", sizes: "8", media: "shm", rounds: 1, duration: 1, algorithms: "ring,auto"},
	} {
		var fe *flagError
		if err := bad.resolve(4); !errors.As(err, &fe) {
			t.Errorf("%+v: %v, want a *flagError", bad, err)
		}
	}
}

func TestFastest(t *testing.T) {
	for _, c := range []struct {
		impls map[string][]sample
		want  string
	}{
		{map[string][]sample{implBoltmesh: {{P50: 5, P99: 9}}, implAlgorithm("ring"): {{P50: 4, P99: 9}}, implAlgorithm("halving"): {{P50: 6, P99: 7}}, implOpenMPI: {{P50: 1, P99: 2}}}, "ring"},
		{map[string][]sample{implBoltmesh: {{P50: 3, P99: 9}}, implAlgorithm("doubling"): {{P50: 1, P99: 9}, {P50: 8, P99: 9}, {P50: 9, P99: 9}}}, "auto"},
		{map[string][]sample{implOpenMPI: {{P50: 1, P99: 2}}}, "-"},
	} {
		if got := fastest(c.impls); got != c.want {
			t.Errorf("fastest(%v) = %q, want %q (OpenMPI does not count, medians do)", c.impls, got, c.want)
		}
	}
}

// TestCoresNone: --anchor none and --gloo none leave OpenMPI and Gloo
// out, saying so, without looking for mpicc or python3.
func TestCoresNone(t *testing.T) {
	var log strings.Builder
	f := coresFlags{anchor: "none", gloo: "none"}
	s, err := newSitting(&f, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(s.tmp)
	if s.mpiBin != "" || s.python != "" {
		t.Errorf("OpenMPI %q, Gloo %q: want neither", s.mpiBin, s.python)
	}
	for _, want := range []string{"--anchor none: OpenMPI is not measured", "--gloo none: Gloo is not measured"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %q in:\n%s", want, log.String())
		}
	}
}

// TestCores runs a short sitting: boltmesh at 2 ranks over shared memory
// and TCP, with its single copy over shared memory (boltmesh-cma), and
// with the ring and halving fixed (boltmesh-ring, boltmesh-halving);
// OpenMPI beside it where mpicc and mpirun are on the PATH, Gloo where
// python3 imports torch; the table, the JSON and the charts come out.
func TestCores(t *testing.T) {
	dir := t.TempDir()
	js, plots := filepath.Join(dir, "cores.json"), filepath.Join(dir, "plots")
	stdout, stderr, err := cli(t, "cores", "--ns", "2", "--sizes", "8,512K", "--media", "shm,tcp", "--rounds", "1",
		"--duration", "100ms", "--anchor", "../../bench/netns/mpi_allreduce.c", "--gloo", "../../bench/netns/gloo_allreduce.py",
		"--single-copy", "256K", "--algorithms", "ring,halving", "--pingpong", "8", "--pingpong-anchor", "../../bench/anchors/mpi_pingpong.c", "--json", js, "--plot", plots)
	if err != nil {
		t.Fatalf("cores: %v\n%s", err, stderr)
	}
	for _, want := range []string{"== allreduce · shm · p50 / p99 µs", "== allreduce · tcp · p50 / p99 µs", "== pingpong · shm · round trip p50 / p99 µs", "512 KiB", "boltmesh-cma", "cma ratio", "boltmesh-ring", "boltmesh-halving", "fastest"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in the table:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep coresReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != coresSchema || len(rep.Cases) != 6 {
		t.Fatalf("report %+v: want 6 cases (4 allreduce, 2 ping-pong)", rep)
	}
	mpi := !strings.Contains(stderr, "OpenMPI is not measured")
	// Gloo where python3 has torch; a run of it that failed here (a
	// sandbox that torch cannot start in) is logged, not judged.
	gloo := !strings.Contains(stderr, "Gloo is not measured") && !strings.Contains(stderr, "Gloo at ")
	for _, c := range rep.Cases {
		want := []string{implBoltmesh}
		if c.Medium == "shm" {
			want = append(want, implCopy)
		}
		if c.Op == opAllreduce {
			want = append(want, implAlgorithm("ring"), implAlgorithm("halving"))
		}
		if mpi {
			want = append(want, implOpenMPI)
		}
		if gloo && c.Medium == "tcp" && c.Op == opAllreduce {
			want = append(want, implGloo)
		}
		for _, impl := range want {
			if xs := c.Impls[impl]; c.Ranks != 2 || len(xs) != 1 || xs[0].P50 <= 0 || xs[0].P99 < xs[0].P50 {
				t.Errorf("case %s %s %d B: %s %+v, want one sample with 0 < p50 <= p99 (stderr %s)", c.Op, c.Medium, c.Bytes, impl, xs, stderr)
			}
		}
		if len(c.Impls) != len(want) {
			t.Errorf("case %s %s %d B: implementations %v, want %v", c.Op, c.Medium, c.Bytes, c.Impls, want)
		}
	}
	if !mpi || !gloo {
		t.Logf("not measured here: %s", stderr)
	}
	for _, f := range []string{"allreduce-shm-8B.svg", "allreduce-shm-512KiB.svg", "allreduce-shm-n2.svg", "allreduce-tcp-n2.svg"} {
		if _, err := os.Stat(filepath.Join(plots, f)); err != nil {
			t.Error(err)
		}
	}
}
