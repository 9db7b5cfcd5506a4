package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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

func TestCoresFlags(t *testing.T) {
	f := coresFlags{ns: "2,4,16,4", sizes: "8,1K", media: "tcp", rounds: 1, duration: 1}
	if err := f.resolve(4); err != nil {
		t.Fatal(err)
	}
	if len(f.worlds) != 2 || f.worlds[0] != 2 || f.worlds[1] != 4 || len(f.skipped()) != 1 || f.skipped()[0] != 16 {
		t.Errorf("worlds %v, skipped %v: want [2 4], [16] on 4 cores", f.worlds, f.skipped())
	}
	for _, bad := range []coresFlags{
		{ns: "1", sizes: "8", media: "shm", rounds: 1, duration: 1},
		{ns: "8", sizes: "8", media: "shm", rounds: 1, duration: 1},
		{ns: "2", sizes: "6", media: "shm", rounds: 1, duration: 1},
		{ns: "2", sizes: "8", media: "ib", rounds: 1, duration: 1},
		{ns: "2", sizes: "8", media: "shm", rounds: 0, duration: 1},
	} {
		var fe *flagError
		if err := bad.resolve(4); !errors.As(err, &fe) {
			t.Errorf("%+v: %v, want a *flagError", bad, err)
		}
	}
}

// TestCores runs a short sitting: boltmesh at 2 ranks over shared memory,
// OpenMPI beside it where mpicc and mpirun are on the PATH; the table,
// the JSON and the charts come out.
func TestCores(t *testing.T) {
	dir := t.TempDir()
	js, plots := filepath.Join(dir, "cores.json"), filepath.Join(dir, "plots")
	stdout, stderr, err := cli(t, "cores", "--ns", "2", "--sizes", "8,64K", "--media", "shm", "--rounds", "1",
		"--duration", "100ms", "--anchor", "../../bench/netns/mpi_allreduce.c", "--json", js, "--plot", plots)
	if err != nil {
		t.Fatalf("cores: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "== allreduce · shm · p50 / p99 µs") || !strings.Contains(stdout, "64 KiB") {
		t.Errorf("no table:\n%s", stdout)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep coresReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != coresSchema || len(rep.Cases) != 2 {
		t.Fatalf("report %+v: want 2 cases", rep)
	}
	mpi := !strings.Contains(stderr, "OpenMPI is not measured")
	for _, c := range rep.Cases {
		bm := c.Impls[implBoltmesh]
		if c.Medium != "shm" || c.Ranks != 2 || len(bm) != 1 || bm[0].P50 <= 0 || bm[0].P99 < bm[0].P50 {
			t.Errorf("case %+v: want one boltmesh sample with 0 < p50 <= p99", c)
		}
		if mpi && len(c.Impls[implOpenMPI]) != 1 {
			t.Errorf("case %+v: OpenMPI was found but not measured (stderr %s)", c, stderr)
		}
	}
	if !mpi {
		t.Logf("OpenMPI not measured here: %s", stderr)
	}
	for _, f := range []string{"allreduce-shm-8B.svg", "allreduce-shm-64KiB.svg", "allreduce-shm-n2.svg"} {
		if _, err := os.Stat(filepath.Join(plots, f)); err != nil {
			t.Error(err)
		}
	}
}
