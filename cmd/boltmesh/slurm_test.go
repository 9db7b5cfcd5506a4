//go:build linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSrun runs "srun -N1 -n2 boltmesh bench --quick --suite barrier"
// on a one-node Slurm of its own (startSlurm): the 2 tasks find their
// rank and world in SLURM_PROCID and SLURM_NTASKS and meet at
// --rendezvous, or at the rendezvous they derive from the step
// (slurmRendezvous) while something else holds defaultRendezvous, as a
// concurrent step would (before that derivation, rank 0 failed there
// with "address already in use"). Skips, saying why, without root,
// slurm-wlm and munge, or where the daemons cannot run. "train" runs
// `srun -n2 boltmesh train --quick` on the same cluster.
func TestSrun(t *testing.T) {
	c := startSlurm(t)
	bench := []string{os.Args[0], "bench", "--quick", "--suite", "barrier", "--progress=false", "--timeout", "20s"}
	t.Run("rendezvous flag", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "srun.json")
		stdout, err := c.srun(t, 2, nil, append(bench, "--rendezvous", "127.0.0.1:"+freePort(t), "--json", out)...)
		if err != nil {
			t.Fatalf("srun: %v\n%s", err, stdout)
		}
		checkTwoRanks(t, stdout, out)
	})
	t.Run("step rendezvous", func(t *testing.T) {
		if ln, err := net.Listen("tcp", defaultRendezvous); err == nil {
			defer ln.Close()
		}
		out := filepath.Join(t.TempDir(), "srun.json")
		stdout, err := c.srun(t, 2, []string{"BOLTMESH_RENDEZVOUS=", "MASTER_ADDR=", "MASTER_PORT="}, append(bench, "--json", out)...)
		if err != nil {
			t.Fatalf("srun: %v\n%s", err, stdout)
		}
		checkTwoRanks(t, stdout, out)
	})
	t.Run("train", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "train.json")
		stdout, err := c.srun(t, 2, nil, os.Args[0], "train", "--quick", "--samples", "1024", "--epochs", "1", "--progress=false",
			"--rendezvous", "127.0.0.1:"+freePort(t), "--json", out)
		if err != nil {
			t.Fatalf("srun: %v\n%s", err, stdout)
		}
		rep := readTrainReport(t, out)
		if rep.World != 2 || len(rep.Ranks) != 2 || rep.Ranks[1].Contributed != rep.Ranks[1].Steps {
			t.Errorf("world %d, ranks %+v", rep.World, rep.Ranks)
		}
	})
}

// checkTwoRanks checks that rank 0 printed the barrier table and that
// every result of the report in file ran on 2 ranks.
func checkTwoRanks(t *testing.T, stdout, file string) {
	t.Helper()
	if !strings.Contains(stdout, "barrier · 2 ranks") {
		t.Errorf("no 2-rank barrier table in the output:\n%s", stdout)
	}
	rep := readReport(t, file)
	if len(rep.Results) == 0 {
		t.Fatal("no results in the report")
	}
	for _, r := range rep.Results {
		if r.Ranks != 2 {
			t.Errorf("%s %s: %d ranks, want 2", r.Impl, r.Key(), r.Ranks)
		}
	}
}
